package io.github.ringbus.spring;

import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Import;
import org.springframework.core.io.support.SpringFactoriesLoader;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An invalid {@code ringbus.*} value, or a combination of values the bus cannot run, stops start-up with Spring
 * Boot's short report ("APPLICATION FAILED TO START": a description and an action) that names the properties and
 * what to set them to, as the analyzers Spring Boot loads from {@code spring.factories} make it.
 */
class InvalidPropertiesReportTest {

    static {
        System.setProperty("axoniq.update-checker.disabled", "true");
    }

    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import({SpringAccount.class, RingbusAutoConfigurationTest.BankApp.class})
    static class App {
    }

    private final ApplicationContextRunner app = new ApplicationContextRunner()
            .withUserConfiguration(App.class)
            .withPropertyValues("axon.axonserver.enabled=false");

    @Test
    void anUnknownWaitStrategyIsReportedWithItsPropertyAndTheValidValues() {
        app.withPropertyValues("ringbus.wait-strategy=fast").run(context -> {
            assertThat(context).hasFailed();
            String report = report(context.getStartupFailure());

            assertThat(report).contains("ringbus.wait-strategy").contains("fast")
                              .contains("ADAPTIVE").contains("BLOCKING");
        });
    }

    @Test
    void compactWithTwoHandlerThreadsIsReportedInPropertiesNotBuilderMethods() {
        app.withPropertyValues("ringbus.topology=compact", "ringbus.handler-threads=2").run(context -> {
            assertThat(context).hasFailed();
            String report = report(context.getStartupFailure());

            assertThat(report).contains("ringbus.topology=COMPACT").contains("ringbus.handler-threads is 2")
                              .contains("set ringbus.handler-threads=1, or ringbus.topology=FULL")
                              .doesNotContain("handlerThreads(");
        });
    }

    @Test
    void compactWithTwoStoreThreadsIsReportedInProperties() {
        app.withPropertyValues("ringbus.topology=COMPACT", "ringbus.store-threads=2").run(context -> {
            assertThat(context).hasFailed();
            String report = report(context.getStartupFailure());

            assertThat(report).contains("ringbus.store-threads is 2").contains("ringbus.topology=FULL")
                              .doesNotContain("storeThreads(");
        });
    }

    @Test
    void aValueRefusedAloneIsReportedWithItsProperty() {
        app.withPropertyValues("ringbus.ring-size=1000").run(context -> {
            assertThat(context).hasFailed();

            assertThat(report(context.getStartupFailure())).contains("ringbus.ring-size").contains("power of two");
        });
    }

    /**
     * The description and action of the first analyzer Spring Boot would load that analyzes the failure (Boot's own
     * and ringbus's, in Boot's order), as its "APPLICATION FAILED TO START" report prints them.
     */
    private static String report(Throwable failure) {
        List<FailureAnalyzer> analyzers = SpringFactoriesLoader.forDefaultResourceLocation(
                        InvalidPropertiesReportTest.class.getClassLoader())
                .load(FailureAnalyzer.class, SpringFactoriesLoader.FailureHandler.handleMessage((message, e) -> {
                }));
        assertThat(analyzers).as("analyzers loaded").isNotEmpty();
        for (FailureAnalyzer analyzer : analyzers) {
            FailureAnalysis analysis = analyzer.analyze(failure);
            if (analysis != null) {
                return analysis.getDescription() + "\nAction:\n" + analysis.getAction();
            }
        }
        throw new AssertionError("no failure analyzer explains " + failure);
    }
}
