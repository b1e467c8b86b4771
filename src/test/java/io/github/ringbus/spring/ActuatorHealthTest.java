package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.util.ClassUtils;

import java.lang.reflect.Method;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code ringbus} component in Spring Boot Actuator's health endpoint and in the readiness group an application
 * names it in, as an application with Actuator has them, on whichever Spring Boot runs the test: Spring Boot 3's health
 * API in the default run, Spring Boot 4's ({@code spring-boot-health}) in the {@code spring-boot-4} profile's. The
 * endpoint is read through reflection, as its class and the type it returns differ between the two.
 */
class ActuatorHealthTest {

    static {
        System.setProperty("axoniq.update-checker.disabled", "true");
    }

    private static final String READINESS_WITH_RINGBUS =
            "management.endpoint.health.group.readiness.include=readinessState,ringbus";

    private final ApplicationContextRunner runner =
            new ApplicationContextRunner().withUserConfiguration(RingbusAutoConfigurationTest.BankApp.class)
                                          .withPropertyValues("axon.axonserver.enabled=false",
                                                              "management.endpoint.health.show-details=always",
                                                              "management.endpoint.health.probes.enabled=true",
                                                              READINESS_WITH_RINGBUS);

    @Test
    void theRingIsTheRingbusComponentOfTheHealthEndpointUpWithItsBus() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            context.getBean(CommandGateway.class).sendAndWait(new Open("healthy"));

            Object ringbus = healthForPath(context, "ringbus");

            assertThat(statusOf(ringbus)).isEqualTo("UP");
            assertThat(detailsOf(ringbus)).containsKey(RingbusAutoConfiguration.BUS_BEAN_NAME);
        });
    }

    @Test
    void theComponentIsBuiltOnTheHealthApiOfTheSpringBootThatRuns() {
        runner.run(context -> {
            boolean boot4 = SpringBootVersion.getVersion().startsWith("4.");

            assertThat(context.getBean(RingbusHealthAutoConfiguration.BEAN_NAME))
                    .isInstanceOf(boot4 ? RingbusHealthIndicator4.class : RingbusHealthIndicator.class);
            assertThat(ClassUtils.isPresent("org.springframework.boot.actuate.health.HealthIndicator", null))
                    .as("Spring Boot 3's health API on the class path").isEqualTo(!boot4);
        });
    }

    @Test
    void aReadinessGroupThatNamesRingbusIsUpWhileTheRingRunsAndDownOnceItIsShutDown() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            acceptTraffic(context);

            assertThat(statusOf(healthForPath(context, "readiness"))).isEqualTo("UP");

            context.getBean(RingCommandBus.class).shutdown();

            assertThat(statusOf(healthForPath(context, "readiness"))).isEqualTo("DOWN");
        });
    }

    @Test
    void aReadinessGroupThatNamesRingbusStillStartsWithRingbusSwitchedOff() {
        runner.withPropertyValues("ringbus.enabled=false").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).doesNotHaveBean(RingbusAutoConfiguration.BUS_BEAN_NAME);

            Object ringbus = healthForPath(context, "ringbus");

            assertThat(statusOf(ringbus)).isEqualTo("UP");
            assertThat(detailsOf(ringbus)).containsEntry("off", RingbusOffAutoConfiguration.LINE);
            acceptTraffic(context);
            assertThat(statusOf(healthForPath(context, "readiness"))).isEqualTo("UP");
        });
    }

    @Test
    void aNegativeStoreFailureWindowFailsTheStartNamingTheProperty() {
        runner.withPropertyValues("ringbus.health.store-failure-window=-1s").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasRootCauseInstanceOf(
                    org.axonframework.common.AxonConfigurationException.class);
            assertThat(context.getStartupFailure()).hasStackTraceContaining("ringbus.health.store-failure-window");
        });
    }

    /** What SpringApplication publishes once the application is ready (a context runner does not). */
    private static void acceptTraffic(ApplicationContext context) {
        AvailabilityChangeEvent.publish(context, ReadinessState.ACCEPTING_TRAFFIC);
    }

    /** The endpoint's answer for a path (a component or a group): Boot 3's HealthComponent or Boot 4's descriptor. */
    private static Object healthForPath(ApplicationContext context, String path) throws ReflectiveOperationException {
        Object endpoint = context.getBean("healthEndpoint");
        Method forPath = endpoint.getClass().getMethod("healthForPath", String[].class);
        Object health = forPath.invoke(endpoint, (Object) new String[] {path});
        assertThat(health).as("the health endpoint's answer for " + path).isNotNull();
        return health;
    }

    private static String statusOf(Object health) throws ReflectiveOperationException {
        Object status = health.getClass().getMethod("getStatus").invoke(health);
        return (String) status.getClass().getMethod("getCode").invoke(status);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> detailsOf(Object health) throws ReflectiveOperationException {
        return (Map<String, Object>) health.getClass().getMethod("getDetails").invoke(health);
    }
}
