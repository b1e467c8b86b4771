package io.github.ringbus;

import jakarta.transaction.Transactional;
import org.axonframework.commandhandling.AnnotationCommandHandlerAdapter;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.messaging.MessageHandler;
import org.junit.jupiter.api.Test;

import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which external command handlers declare a transaction: the handler method of the command or its class carries a
 * {@code @Transactional}, directly or through an annotation of the application's; read through a proxy's class.
 */
class TransactionalHandlersTest {

    record Publish(String id) {
    }

    record Archive(String id) {
    }

    @Transactional
    static class TransactionalComponent {

        @CommandHandler
        void handle(Publish command) {
        }
    }

    static class OneTransactionalMethod {

        @Transactional
        @CommandHandler
        void handle(Publish command) {
        }

        @CommandHandler
        void handle(Archive command) {
        }
    }

    @Retention(RetentionPolicy.RUNTIME)
    @Transactional
    @interface ApplicationTransaction {
    }

    static class MetaAnnotated {

        @ApplicationTransaction
        @CommandHandler(commandName = "publish-cart")
        void handle(Publish command) {
        }
    }

    /** Named as the proxies of Spring's CGLIB are: {@code $$SpringCGLIB$$0}. */
    static class OneTransactionalMethod$$Proxy$$0 extends OneTransactionalMethod {

        @Override
        void handle(Publish command) {
        }
    }

    private static boolean declares(Object component, String commandName) {
        return TransactionalHandlers.declaresTransaction(new AnnotationCommandHandlerAdapter<>(component),
                                                         commandName);
    }

    @Test
    void aTransactionalClassDeclaresATransactionForEachOfItsCommands() {
        assertThat(declares(new TransactionalComponent(), Publish.class.getName())).isTrue();
    }

    @Test
    void aTransactionalMethodDeclaresOneForItsCommandOnly() {
        assertThat(declares(new OneTransactionalMethod(), Publish.class.getName())).isTrue();
        assertThat(declares(new OneTransactionalMethod(), Archive.class.getName())).isFalse();
    }

    @Test
    void anAnnotationThatCarriesTransactionalDeclaresOneUnderItsCommandName() {
        assertThat(declares(new MetaAnnotated(), "publish-cart")).isTrue();
        assertThat(declares(new MetaAnnotated(), Publish.class.getName())).isFalse();
    }

    @Test
    void aProxyIsReadThroughTheClassItExtends() {
        assertThat(declares(new OneTransactionalMethod$$Proxy$$0(), Publish.class.getName())).isTrue();
        assertThat(declares(new OneTransactionalMethod$$Proxy$$0(), Archive.class.getName())).isFalse();
    }

    @Test
    void aHandlerThatIsNoAnnotatedComponentDeclaresNone() {
        MessageHandler<CommandMessage<?>> lambda = command -> null;
        assertThat(TransactionalHandlers.declaresTransaction(lambda, Publish.class.getName())).isFalse();
    }
}
