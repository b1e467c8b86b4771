package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountCommands.Withdraw;
import io.github.ringbus.fixtures.AccountEvents;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.callbacks.LoggingCallback;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.config.Configuration;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.messaging.unitofwork.DefaultUnitOfWork;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

import java.util.List;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * An application component that takes Axon's {@link SimpleCommandBus} by type, to run several commands on the
 * caller's thread in one Unit of Work (all accounts opened, or none), as a real application does: the application
 * starts with ringbus, the component's commands run as they would on Axon's bus, and the ring's cached aggregates
 * never miss what they stored.
 */
class InjectedSimpleCommandBusTest {

    private final ApplicationContextRunner runner =
            new ApplicationContextRunner().withUserConfiguration(App.class, AccountOpener.class)
                                          .withPropertyValues("axon.axonserver.enabled=false");

    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(SpringAccount.class)
    static class App {

        @Bean
        ManyAccounts manyAccounts(SimpleCommandBus commandBus) {
            return new ManyAccounts(commandBus);
        }

        @Bean
        EventStorageEngine storageEngine() {
            return new org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine();
        }
    }

    /** Opens several accounts in one Unit of Work, on the caller's thread: all of them, or none. */
    static class AccountOpener {

        private final SimpleCommandBus commandBus;

        AccountOpener(SimpleCommandBus commandBus) {
            this.commandBus = commandBus;
        }

        void openAll(List<String> accountIds) {
            inOneUnitOfWork(() -> {
                for (String accountId : accountIds) {
                    run(commandBus, new Open(accountId));
                }
            });
        }

        /** Opens the account and withdraws from it in one Unit of Work: a withdrawal it cannot cover fails both. */
        void openAndWithdraw(String accountId, long amount) {
            inOneUnitOfWork(() -> {
                run(commandBus, new Open(accountId));
                run(commandBus, new Withdraw(accountId, amount));
            });
        }

        void deposit(String accountId, long amount) {
            inOneUnitOfWork(() -> run(commandBus, new Deposit(accountId, amount)));
        }

        private static void inOneUnitOfWork(Runnable commands) {
            UnitOfWork<?> unitOfWork = DefaultUnitOfWork.startAndGet(null);
            try {
                unitOfWork.execute(commands);
            } finally {
                assertThat(unitOfWork.isActive()).isFalse();
            }
        }

        private static void run(SimpleCommandBus bus, Object command) {
            FutureCallback<Object, Object> callback = new FutureCallback<>();
            bus.dispatch(asCommandMessage(command), callback);
            CommandResultMessage<?> result = callback.getResult();
            if (result.isExceptional()) {
                throw new IllegalStateException("command " + command + " failed", result.exceptionResult());
            }
        }
    }

    /** Opens several accounts at once. */
    record OpenMany(List<String> accountIds, boolean failAfterwards) {
    }

    /** Deposits into an account that another command opened. */
    record DepositElsewhere(String accountId, long amount) {
    }

    /** Opens an account on the injected bus, then deposits into it on the same bus. */
    record OpenThenDeposit(String accountId, long amount) {
    }

    /**
     * A command handler that sends, from inside its own {@code @CommandHandler}, commands on the injected
     * {@code SimpleCommandBus} without waiting ("so that all commands participate in the same transaction"), as the
     * public application axon-exhibition's {@code MultiAccountCreationTransactionHandler} does: on the ring, its
     * handler runs on a ring thread.
     */
    static class ManyAccounts {

        private final SimpleCommandBus commandBus;

        ManyAccounts(SimpleCommandBus commandBus) {
            this.commandBus = commandBus;
        }

        @CommandHandler
        public void handle(OpenMany command) {
            for (String accountId : command.accountIds()) {
                commandBus.dispatch(asCommandMessage(new Open(accountId)), LoggingCallback.INSTANCE);
            }
            if (command.failAfterwards()) {
                throw new IllegalStateException("fails after opening " + command.accountIds());
            }
        }

        @CommandHandler
        public void handle(OpenThenDeposit command) {
            commandBus.dispatch(asCommandMessage(new Open(command.accountId())), LoggingCallback.INSTANCE);
            FutureCallback<Object, Object> deposited = new FutureCallback<>();
            commandBus.dispatch(asCommandMessage(new Deposit(command.accountId(), command.amount())), deposited);
            CommandResultMessage<?> result = deposited.getResult();
            if (result.isExceptional()) {
                throw new IllegalStateException("the deposit failed", result.exceptionResult());
            }
        }

        @CommandHandler
        public void handle(DepositElsewhere command) {
            commandBus.dispatch(asCommandMessage(new Deposit(command.accountId(), command.amount())),
                                LoggingCallback.INSTANCE);
        }
    }

    @Test
    void aRingHandlerThatCreatesAggregatesOnTheInjectedBusStoresThemWithItsOwnCommand() {
        runner.run(context -> {
            CommandGateway gateway = context.getBean(CommandGateway.class);

            gateway.sendAndWait(new OpenMany(List.of("m1", "m2"), false));

            EventStorageEngine engine = context.getBean(EventStorageEngine.class);
            assertThat(payloads(engine, "m1")).containsExactly(new AccountEvents.Opened("m1"));
            assertThat(payloads(engine, "m2")).containsExactly(new AccountEvents.Opened("m2"));
            assertThat(gateway.<Object>sendAndWait(new Deposit("m2", 4))).isEqualTo(4L);
        });
    }

    @Test
    void aRingHandlerThatFailsAfterCreatingAggregatesOnTheInjectedBusStoresNoneOfThem() {
        runner.run(context -> {
            CommandGateway gateway = context.getBean(CommandGateway.class);

            assertThatThrownBy(() -> gateway.sendAndWait(new OpenMany(List.of("f1", "f2"), true)))
                    .hasMessageContaining("fails after opening");

            EventStorageEngine engine = context.getBean(EventStorageEngine.class);
            assertThat(payloads(engine, "f1")).isEmpty();
            assertThat(payloads(engine, "f2")).isEmpty();
        });
    }

    /**
     * As on SimpleCommandBus: an aggregate a ring handler created on the injected bus is found again by the next command
     * it sends there (this thread made it, in the sender's Unit of Work), and both are stored with the sender's command.
     */
    @Test
    void aRingHandlerThatCreatesAnAggregateOnTheInjectedBusAndThenSendsItACommandThereStoresBoth() {
        runner.run(context -> {
            CommandGateway gateway = context.getBean(CommandGateway.class);

            gateway.sendAndWait(new OpenThenDeposit("y1", 5));

            assertThat(payloads(context.getBean(EventStorageEngine.class), "y1"))
                    .containsExactly(new AccountEvents.Opened("y1"), new AccountEvents.Deposited("y1", 5));
            assertThat(gateway.<Object>sendAndWait(new Deposit("y1", 2))).isEqualTo(7L);
        });
    }

    /**
     * A command for an aggregate that another ring thread may own cannot run on the sender's thread: the sender's
     * command fails, saying why and what to do, instead of succeeding without it while the side bus's callback only
     * logs the refusal.
     */
    @Test
    void aRingHandlerThatSendsAnotherAggregatesCommandOnTheInjectedBusFailsItsOwnCommandSayingWhy() {
        runner.run(context -> {
            CommandGateway gateway = context.getBean(CommandGateway.class);
            gateway.sendAndWait(new Open("d"));

            assertThatThrownBy(() -> gateway.sendAndWait(new DepositElsewhere("d", 7)))
                    .hasMessageContaining("beside the ring")
                    .hasMessageContaining("Send it on the ring's CommandGateway");

            assertThat(payloads(context.getBean(EventStorageEngine.class), "d"))
                    .containsExactly(new AccountEvents.Opened("d"));
        });
    }

    @Test
    void anApplicationThatTakesASimpleCommandBusStartsAndTheRingStaysItsCommandBus() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(CommandBus.class)).isInstanceOf(RingCommandBus.class);
            assertThat(context.getBean(Configuration.class).commandBus()).isInstanceOf(RingCommandBus.class);
            assertThat(context.getBean(SimpleCommandBus.class)).isNotNull();
        });
    }

    @Test
    void commandsRunOnTheInjectedBusInOneUnitOfWorkAreStoredTogether() {
        runner.run(context -> {
            context.getBean(AccountOpener.class).openAll(List.of("x", "y"));

            EventStorageEngine engine = context.getBean(EventStorageEngine.class);
            assertThat(payloads(engine, "x")).containsExactly(new AccountEvents.Opened("x"));
            assertThat(payloads(engine, "y")).containsExactly(new AccountEvents.Opened("y"));
            Object balance = context.getBean(CommandGateway.class).sendAndWait(new Deposit("x", 5));
            assertThat(balance).as("the ring's deposit on an account the injected bus opened").isEqualTo(5L);
        });
    }

    @Test
    void aFailedCommandOnTheInjectedBusRollsBackEveryCommandOfItsUnitOfWork() {
        runner.run(context -> {
            AccountOpener opener = context.getBean(AccountOpener.class);

            assertThatThrownBy(() -> opener.openAndWithdraw("short", 10)).hasMessageContaining("failed");

            EventStorageEngine engine = context.getBean(EventStorageEngine.class);
            assertThat(payloads(engine, "short")).as("events of the command before the failed one").isEmpty();
        });
    }

    @Test
    void theRingSeesWhatTheInjectedBusStoredOnAnAggregateItHadCached() {
        runner.run(context -> {
            CommandGateway ring = context.getBean(CommandGateway.class);
            ring.sendAndWait(new Open("s"));
            ring.sendAndWait(new Deposit("s", 5)); // the ring has the account in its cache now

            context.getBean(AccountOpener.class).deposit("s", 3);
            Object balance = ring.sendAndWait(new Deposit("s", 1));

            assertThat(balance).as("balance after the ring's deposit").isEqualTo(9L);
            assertThat(context.getBean(EventStorageEngine.class).readEvents("s").asStream()
                              .map(DomainEventMessage::getSequenceNumber).collect(Collectors.toList()))
                    .containsExactly(0L, 1L, 2L, 3L);
        });
    }

    private static List<Object> payloads(EventStorageEngine engine, String aggregateId) {
        return engine.readEvents(aggregateId).asStream().map(DomainEventMessage::getPayload)
                     .collect(Collectors.toList());
    }
}
