package quickstart;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The quick start runs as the README shows it: one account opened, 100 deposited. */
class QuickStartTest {

    @Test
    void theQuickStartOpensAnAccountAndDeposits() {
        PrintStream original = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
        try {
            QuickStart.main(new String[0]);
        } finally {
            System.setOut(original);
        }
        String output = printed.toString(StandardCharsets.UTF_8);
        assertTrue(output.contains("balance: 100"), output);
    }
}
