package io.github.ringbus.examples.bank.web;

import io.github.ringbus.examples.bank.account.AccountCommands.DepositMoney;
import io.github.ringbus.examples.bank.account.AccountCommands.OpenAccount;
import io.github.ringbus.examples.bank.account.AccountCommands.WithdrawMoney;
import io.github.ringbus.examples.bank.account.InsufficientFundsException;
import io.github.ringbus.examples.bank.balance.BalanceProjection;
import io.github.ringbus.examples.bank.balance.BalanceProjection.AccountBalance;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.modelling.command.AggregateNotFoundException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

import java.util.Map;
import java.util.UUID;

/**
 * A small HTTP interface:
 * <pre>
 * curl -X POST localhost:8080/accounts -H 'Content-Type: application/json' -d '{"owner":"Ada"}'
 * curl -X POST localhost:8080/accounts/{id}/deposit -H 'Content-Type: application/json' -d '{"amount":100}'
 * curl -X POST localhost:8080/accounts/{id}/withdraw -H 'Content-Type: application/json' -d '{"amount":30}'
 * curl localhost:8080/accounts/{id}
 * </pre>
 */
@RestController
@RequestMapping("/accounts")
public class AccountController {

    /** The body of a request to open an account. */
    public record OpenRequest(String owner) {
    }

    /** The body of a deposit or withdrawal. */
    public record AmountRequest(long amount) {
    }

    private final CommandGateway commands;
    private final BalanceProjection balances;

    public AccountController(CommandGateway commands, BalanceProjection balances) {
        this.commands = commands;
        this.balances = balances;
    }

    @PostMapping
    public ResponseEntity<Map<String, String>> open(@RequestBody OpenRequest request) {
        String accountId = UUID.randomUUID().toString();
        commands.sendAndWait(new OpenAccount(accountId, request.owner()));
        return ResponseEntity.status(HttpStatus.CREATED).body(Map.of("accountId", accountId));
    }

    @PostMapping("/{accountId}/deposit")
    public Map<String, Object> deposit(@PathVariable String accountId, @RequestBody AmountRequest request) {
        long balance = commands.sendAndWait(new DepositMoney(accountId, request.amount()));
        return Map.of("accountId", accountId, "balance", balance);
    }

    @PostMapping("/{accountId}/withdraw")
    public Map<String, Object> withdraw(@PathVariable String accountId, @RequestBody AmountRequest request) {
        long balance = commands.sendAndWait(new WithdrawMoney(accountId, request.amount()));
        return Map.of("accountId", accountId, "balance", balance);
    }

    /** The read model: it may lag the commands by a few milliseconds. */
    @GetMapping("/{accountId}")
    public ResponseEntity<AccountBalance> balance(@PathVariable String accountId) {
        return ResponseEntity.of(balances.find(accountId));
    }

    @ExceptionHandler(InsufficientFundsException.class)
    ResponseEntity<Map<String, String>> refused(InsufficientFundsException e) {
        return ResponseEntity.status(HttpStatus.CONFLICT).body(Map.of("error", e.getMessage()));
    }

    @ExceptionHandler(AggregateNotFoundException.class)
    ResponseEntity<Map<String, String>> unknown(AggregateNotFoundException e) {
        return ResponseEntity.status(HttpStatus.NOT_FOUND).body(Map.of("error", e.getMessage()));
    }

    @ExceptionHandler(IllegalArgumentException.class)
    ResponseEntity<Map<String, String>> invalid(IllegalArgumentException e) {
        return ResponseEntity.badRequest().body(Map.of("error", e.getMessage()));
    }
}
