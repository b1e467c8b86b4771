package io.github.ringbus.spring;

import io.github.ringbus.fixtures.StageThreads;
import io.github.ringbus.RingCommandBus;
import static io.github.ringbus.RingInternals.RING_REPOSITORY;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import org.aopalliance.intercept.MethodInterceptor;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.config.Configuration;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.junit.jupiter.api.Test;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The ring bus bean wrapped by someone else, as monitoring and fault-injection starters do: the application starts,
 * its commands go through the wrapper, and its aggregates still run on the ring.
 */
class WrappedCommandBusTest {

    static {
        System.setProperty("axoniq.update-checker.disabled", "true");
    }

    /** A BeanPostProcessor that puts a {@link RecordingCommandBus} around every command bus bean. */
    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    static class WrappingPostProcessor {

        @Bean
        static BeanPostProcessor wrapCommandBuses() {
            return new BeanPostProcessor() {
                @Override
                public Object postProcessAfterInitialization(Object bean, String beanName) {
                    return bean instanceof CommandBus ? new RecordingCommandBus((CommandBus) bean) : bean;
                }
            };
        }
    }

    /** A BeanPostProcessor that puts a Spring AOP proxy (JDK proxy of the bean's interfaces) around the bus. */
    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    static class AopProxyPostProcessor {

        static final AtomicInteger dispatches = new AtomicInteger();

        @Bean
        static BeanPostProcessor proxyCommandBuses() {
            return new BeanPostProcessor() {
                @Override
                public Object postProcessAfterInitialization(Object bean, String beanName) {
                    if (!(bean instanceof CommandBus)) {
                        return bean;
                    }
                    ProxyFactory proxy = new ProxyFactory(bean);
                    proxy.addAdvice((MethodInterceptor) invocation -> {
                        if (invocation.getMethod().getName().equals("dispatch")) {
                            dispatches.incrementAndGet();
                        }
                        return invocation.proceed();
                    });
                    return proxy.getProxy();
                }
            };
        }
    }

    private final ApplicationContextRunner runner =
            new ApplicationContextRunner().withUserConfiguration(RingbusAutoConfigurationTest.BankApp.class)
                                          .withPropertyValues("axon.axonserver.enabled=false");

    @Test
    void aBusWrappedByABeanPostProcessorStartsAndItsCommandsGoThroughTheWrapperOntoTheRing() {
        runner.withUserConfiguration(WrappingPostProcessor.class).run(context -> {
            assertThat(context).hasNotFailed();
            CommandBus bus = context.getBean(CommandBus.class);
            assertThat(bus).isInstanceOf(RecordingCommandBus.class);
            RecordingCommandBus wrapper = (RecordingCommandBus) bus;
            assertThat(wrapper.delegate).isInstanceOf(RingCommandBus.class);
            assertThat(context.getBean(Configuration.class).commandBus()).isSameAs(bus);

            assertCommandsRunOnTheRing(context);
            assertThat(wrapper.dispatched).containsExactly(Open.class.getName(), Deposit.class.getName());

            RingCommandBus ring = (RingCommandBus) wrapper.delegate;
            assertThat(ring.isRunning()).isTrue();
            context.close();
            assertThat(ring.isRunning()).as("the ring is shut down with the context").isFalse();
        });
    }

    @Test
    void aBusBehindASpringAopProxyStartsAndItsCommandsGoThroughTheProxyOntoTheRing() {
        AopProxyPostProcessor.dispatches.set(0);
        runner.withUserConfiguration(AopProxyPostProcessor.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(CommandBus.class)).isNotInstanceOf(RingCommandBus.class);

            assertCommandsRunOnTheRing(context);
            assertThat(AopProxyPostProcessor.dispatches.get()).isEqualTo(2);
        });
    }

    @Test
    void aPrimaryDecoratorBeanOfAnotherStarterDispatchesOntoTheRing() {
        runner.withPropertyValues("ringbus-test.decorating-starter=true").run(context -> {
            assertThat(context).hasNotFailed();
            CommandBus bus = context.getBean(CommandBus.class);
            assertThat(bus).isInstanceOf(RecordingCommandBus.class);
            assertThat(context.getBean(Configuration.class).commandBus()).isSameAs(bus);
            RecordingCommandBus decorator = (RecordingCommandBus) bus;
            assertThat(decorator.delegate).isSameAs(context.getBean(RingCommandBus.class));

            assertCommandsRunOnTheRing(context);
            assertThat(decorator.dispatched).containsExactly(Open.class.getName(), Deposit.class.getName());
        });
    }

    /** Open and deposit through the gateway: handled on ring handler threads, by a ring repository, and stored. */
    private static void assertCommandsRunOnTheRing(AssertableApplicationContext context) {
        assertThat(context.getBean(Configuration.class).repository(SpringAccount.class))
                .isInstanceOf(RING_REPOSITORY);
        List<String> threads = new CopyOnWriteArrayList<>();
        context.getBean(CommandBus.class).registerHandlerInterceptor((unitOfWork, chain) -> {
            threads.add(Thread.currentThread().getName());
            return chain.proceed();
        });
        CommandGateway gateway = context.getBean(CommandGateway.class);

        gateway.sendAndWait(new Open("a"));
        Object balance = gateway.sendAndWait(new Deposit("a", 42));

        assertThat(balance).isEqualTo(42L);
        assertThat(threads).hasSize(2).allMatch(StageThreads::handles);
        assertThat(context.getBean(EventStore.class).readEvents("a").asStream()
                          .<Object>map(EventMessage::getPayload).collect(Collectors.toList()))
                .containsExactly(new Opened("a"), new Deposited("a", 42));
    }
}
