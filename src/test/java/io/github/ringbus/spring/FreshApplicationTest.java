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
 * A fresh Spring Boot application with Axon's starter and ringbus, Axon Server switched off and nothing configured to
 * store events: start-up fails with Spring Boot's short report that names the fix, not a long stack trace.
 */
class FreshApplicationTest {

    static {
        System.setProperty("axoniq.update-checker.disabled", "true");
    }

    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(SpringAccount.class)
    static class FreshApp {
    }

    private final ApplicationContextRunner freshApp = new ApplicationContextRunner()
            .withUserConfiguration(FreshApp.class)
            .withPropertyValues("axon.axonserver.enabled=false");

    @Test
    void withoutAnEventStoreStartUpFailsWithAReportThatNamesEachWayToStoreEvents() {
        freshApp.run(context -> {
            assertThat(context).hasFailed();
            FailureAnalysis analysis = analysisOf(context.getStartupFailure());

            assertThat(analysis).as("a failure analysis from ringbus's registered FailureAnalyzer").isNotNull();
            assertThat(analysis.getDescription()).contains("no event store")
                                                 .contains("axon.axonserver.enabled=false")
                                                 .contains("EventStorageEngine");
            assertThat(analysis.getAction()).contains("spring-boot-starter-data-jpa")
                                            .contains("spring.datasource.url")
                                            .contains("InMemoryEventStorageEngine")
                                            .contains("ringbus.enabled=false");
        });
    }

    @Test
    void withAnEventStorageEngineTheSameApplicationStarts() {
        freshApp.withUserConfiguration(RingbusAutoConfigurationTest.BankApp.class).run(context -> {
            assertThat(context).hasNotFailed();
        });
    }

    /** What the FailureAnalyzers that Spring Boot would load from {@code spring.factories} make of the failure. */
    @SuppressWarnings("deprecation") // loadFactoryNames: the names alone, without instantiating Boot's own analyzers
    private static FailureAnalysis analysisOf(Throwable failure) throws Exception {
        List<String> analyzers = SpringFactoriesLoader.loadFactoryNames(
                FailureAnalyzer.class, FreshApplicationTest.class.getClassLoader());
        assertThat(analyzers).contains(MissingEventStoreFailureAnalyzer.class.getName());
        var constructor = MissingEventStoreFailureAnalyzer.class.getDeclaredConstructor();
        constructor.setAccessible(true);
        return constructor.newInstance().analyze(failure);
    }
}
