package io.github.ringbus;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaFieldAccess;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The shape of the code base: what a user may rely on, and which way the packages depend on each other.
 * <p>
 * The pipeline's machinery (slot, stages, aggregate holders, routes, admission, lifecycle) lives package-private
 * in {@code io.github.ringbus}, beside the bus it serves; the packages around it (Spring, JDBC, identifiers) use its
 * public API only.
 */
class ArchitectureTest {

    /**
     * Every public type of the library, each with why a user must be able to name it. Adding one is a decision about
     * the API: add it here on purpose, with its reason.
     */
    private static final Map<String, String> PUBLIC_API = new java.util.TreeMap<>();

    static {
        // The bus and how it is made.
        PUBLIC_API.put("io.github.ringbus.RingCommandBus", "the command bus itself");
        PUBLIC_API.put("io.github.ringbus.RingCommandBus$Builder", "the only way to make a bus (validated settings)");
        PUBLIC_API.put("io.github.ringbus.RingEventStore", "the event store users configure so that the store stage "
                + "appends and publishes as two steps (README, Quick start)");
        PUBLIC_API.put("io.github.ringbus.RingEventStore$Builder", "the only way to make a RingEventStore");
        PUBLIC_API.put("io.github.ringbus.RingbusConfigurerModule", "instantiated by Axon's ServiceLoader "
                + "(META-INF/services): it must be public");
        PUBLIC_API.put("io.github.ringbus.AnnotatedTargetResolver", "the default command target resolver, which a "
                + "user may configure for other buses too (docs/migrating-from-disruptor-command-bus.md)");
        // The settings' values.
        PUBLIC_API.put("io.github.ringbus.FullRingPolicy", "the value of Builder.fullRingPolicy");
        PUBLIC_API.put("io.github.ringbus.PublishMode", "the value of Builder.publishMode");
        PUBLIC_API.put("io.github.ringbus.WaitStrategyChoice", "the value of Builder.waitStrategy");
        PUBLIC_API.put("io.github.ringbus.Topology", "the value of Builder.topology");
        // What a callback may receive, caught by type.
        PUBLIC_API.put("io.github.ringbus.RingFullException", "a dispatch's failure when the ring is full (FAIL_FAST)");
        PUBLIC_API.put("io.github.ringbus.CommitOutcomeUnknownException", "a command's failure when its commit's "
                + "outcome is unknown: the caller must not simply retry");
        PUBLIC_API.put("io.github.ringbus.PipelineWaitException", "a dispatch's failure when waiting for a slot "
                + "timed out or was interrupted");
        // What a user implements, and its arguments.
        PUBLIC_API.put("io.github.ringbus.PipelineMonitor", "the monitor a user implements (Builder.pipelineMonitor)");
        PUBLIC_API.put("io.github.ringbus.StageTimes", "what PipelineMonitor is given per command");
        PUBLIC_API.put("io.github.ringbus.StoreFailure", "what RingCommandBus.storeFailure() reports (a store failing "
                + "every attempt), for health checks");
        PUBLIC_API.put("io.github.ringbus.StageThreadTimes", "what RingCommandBus.stageThreadTimes() reports per stage "
                + "thread (its CPU time and time in the store), for metrics");
        PUBLIC_API.put("io.github.ringbus.StoreBatchListener", "the part of PipelineMonitor that hears of each "
                + "stored batch");
        PUBLIC_API.put("io.github.ringbus.RunOnce", "how a handler marks its Unit of Work never to be handled again");
        // The packages around the core.
        PUBLIC_API.put("io.github.ringbus.identifiers.TimeBasedIdentifierFactory", "instantiated by Axon's "
                + "ServiceLoader (META-INF/services): it must be public");
        PUBLIC_API.put("io.github.ringbus.jdbc.PostgresCopyAppend", "what a user gives Axon's JdbcEventStorageEngine "
                + "(appendEvents) so that it appends a batch on PostgreSQL in one binary COPY");
        PUBLIC_API.put("io.github.ringbus.jpa.PostgresJpaEventStorageEngine", "Axon's JPA engine appending a batch "
                + "on PostgreSQL in one statement: what a user (or the Spring Boot auto-configuration) builds instead");
        PUBLIC_API.put("io.github.ringbus.jpa.PostgresJpaEventStorageEngine$Builder", "the only way to make one");
        PUBLIC_API.put("io.github.ringbus.jpa.ByteaPostgreSQLDialect", "named by users in "
                + "spring.jpa.database-platform (Hibernate instantiates it by name)");
        PUBLIC_API.put("io.github.ringbus.jdbc.JdbcTransactionManager", "the transaction manager a user without "
                + "Spring gives the builder for group commit on a DataSource");
        PUBLIC_API.put("io.github.ringbus.distributed.DistributedRingCommandBus", "ringbus as the local segment of "
                + "Axon's DistributedCommandBus over JGroups, for users without Spring");
        PUBLIC_API.put("io.github.ringbus.distributed.DistributedRingCommandBus$Builder", "the only way to make one");
        // Spring Boot: loaded by name, bound to properties, or named by users.
        PUBLIC_API.put("io.github.ringbus.spring.RingbusAutoConfiguration", "listed in Spring Boot's "
                + "AutoConfiguration.imports, which a user excludes by class");
        PUBLIC_API.put("io.github.ringbus.spring.RingbusJpaEventStoreAutoConfiguration", "listed in Spring Boot's "
                + "AutoConfiguration.imports: it must be public");
        PUBLIC_API.put("io.github.ringbus.spring.RingbusOffAutoConfiguration", "listed in Spring Boot's "
                + "AutoConfiguration.imports: it must be public");
        PUBLIC_API.put("io.github.ringbus.spring.RingbusOffAutoConfiguration$RingbusOff", "the bean that says ringbus "
                + "is off (ringbus.enabled=false)");
        PUBLIC_API.put("io.github.ringbus.spring.RingbusHealthAutoConfiguration", "listed in Spring Boot's "
                + "AutoConfiguration.imports: it must be public");
        PUBLIC_API.put("io.github.ringbus.spring.RingbusDistributedAutoConfiguration", "listed in Spring Boot's "
                + "AutoConfiguration.imports, which a user excludes by class");
        PUBLIC_API.put("io.github.ringbus.spring.RingbusProperties", "bound by Spring Boot to ringbus.*; its "
                + "getters and setters give the IDE's metadata");
        PUBLIC_API.put("io.github.ringbus.spring.RingbusProperties$Metrics", "bound to ringbus.metrics.*");
        PUBLIC_API.put("io.github.ringbus.spring.RingbusProperties$Tracing", "bound to ringbus.tracing.*");
        PUBLIC_API.put("io.github.ringbus.spring.RingbusProperties$Health", "bound to ringbus.health.*");
        PUBLIC_API.put("io.github.ringbus.spring.RingbusDistributedProperties", "bound to ringbus.distributed.*");
        PUBLIC_API.put("io.github.ringbus.spring.RingbusMetrics", "the Micrometer monitor a user without the "
                + "auto-configuration makes himself (docs/spring-boot.md)");
        PUBLIC_API.put("io.github.ringbus.spring.RingbusAggregateRouting", "the ConfigurerModule bean that routes "
                + "JPA-mapped and own-repository @Aggregates; an application that builds its own routing replaces it "
                + "by type");
        PUBLIC_API.put("io.github.ringbus.spring.InvalidRingbusPropertyException", "what start-up fails with for an "
                + "invalid ringbus.* value, which Spring Boot's failure analyzers match by type");
    }

    private static final JavaClasses MAIN = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
            .importPackages("io.github.ringbus");

    @Test
    void onlyTheTypesOfThePublicApiArePublic() {
        Set<String> publicTypes = new TreeSet<>();
        for (JavaClass type : MAIN) {
            if (isVisibleOutsideItsPackage(type)) {
                publicTypes.add(type.getName());
            }
        }
        assertThat(publicTypes).containsExactlyInAnyOrderElementsOf(PUBLIC_API.keySet());
    }

    /** The bus reads in one sitting: what it does is delegated to the layers below; its builder comes after. */
    @Test
    void theBusIsAtMost400LinesBeforeItsBuilder() throws java.io.IOException {
        List<String> lines = java.nio.file.Files.readAllLines(
                java.nio.file.Path.of("src/main/java/io/github/ringbus/RingCommandBus.java"));
        int builder = lines.indexOf("    public static final class Builder {");
        assertThat(builder).as("the line where RingCommandBus.Builder begins").isPositive();
        int javadoc = builder;
        while (!lines.get(javadoc - 1).trim().isEmpty()) {
            javadoc--; // the builder's Javadoc belongs to the builder
        }
        assertThat(javadoc).as("lines of RingCommandBus before its builder").isLessThanOrEqualTo(400);
    }

    @Test
    void everyPublicTypeSaysWhyAUserMustNameIt() {
        assertThat(PUBLIC_API).allSatisfy((type, reason) -> assertThat(reason).as(type).hasSizeGreaterThan(20));
    }

    /** Public, and every enclosing type public too (a public nested type of a package-private one is hidden). */
    private static boolean isVisibleOutsideItsPackage(JavaClass type) {
        if (type.isAnonymousClass() || type.isLocalClass()) {
            return false;
        }
        for (JavaClass enclosing = type; enclosing != null; enclosing = enclosing.getEnclosingClass().orElse(null)) {
            if (!enclosing.getModifiers().contains(JavaModifier.PUBLIC)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Each field of the ring's slot has one writer: the stage that fills it (or the dispatcher) sets it directly;
     * anyone else goes through a method of the slot named for what it does ({@code failBeforeHandler},
     * {@code adoptCreatedAggregate}, {@code recordStageFailure}, ...). The slot itself may set any of its fields.
     */
    private static final Map<String, Set<String>> SLOT_FIELD_WRITERS = Map.ofEntries(
            Map.entry("dispatchedNanos", Set.of("Pipeline")),
            Map.entry("handler", Set.of("PreloadStage")),
            Map.entry("repository", Set.of("PreloadStage")),
            Map.entry("holder", Set.of("PreloadStage")),
            Map.entry("segment", Set.of("PreloadStage")),
            Map.entry("expectedVersion", Set.of("PreloadStage")),
            Map.entry("invokeAggregateDirectly", Set.of("PreloadStage")),
            Map.entry("failureBeforeHandler", Set.of("PreloadStage")),
            Map.entry("preloadedNanos", Set.of("PreloadStage")),
            Map.entry("runsWhole", Set.of("PreloadStage")),
            Map.entry("afterEarlierCommands", Set.of("PreloadStage")),
            Map.entry("result", Set.of("HandleStage", "WholeCommandRunner")),
            Map.entry("handlerFailure", Set.of("HandleStage", "WholeCommandRunner")),
            Map.entry("rolledBack", Set.of("HandleStage", "WholeCommandRunner")),
            Map.entry("handledNanos", Set.of("HandleStage")),
            Map.entry("storeShard", Set.of("HandleStage")),
            Map.entry("storeFailure", Set.of("StoreStage", "RefusedBatch")),
            Map.entry("publishFailure", Set.of("PublishStage")),
            Map.entry("completingNanos", Set.of("CompleteStage")));

    @Test
    void eachFieldOfTheSlotIsSetOnlyByTheStageThatOwnsIt() {
        JavaClass slot = MAIN.get(CommandSlot.class);
        List<String> strayWrites = new ArrayList<>();
        for (JavaField field : slot.getFields()) {
            for (JavaFieldAccess access : field.getAccessesToSelf()) {
                if (access.getAccessType() != JavaFieldAccess.AccessType.SET) {
                    continue;
                }
                String writer = access.getOriginOwner().getSimpleName().replaceAll("\\$.*", "");
                if (writer.equals("CommandSlot")) {
                    continue;
                }
                Set<String> owners = SLOT_FIELD_WRITERS.getOrDefault(field.getName(), Set.of());
                if (!owners.contains(writer)) {
                    strayWrites.add(field.getName() + " set by " + access.getOrigin().getFullName() + " (line "
                                            + access.getLineNumber() + "); its writers: " + owners);
                }
            }
        }
        assertThat(strayWrites).as("writes to the slot's fields by a class that does not own them").isEmpty();
    }

    /**
     * The slot's named writers: each method of the slot that sets one of its fields (for a stage other than the one
     * that owns the field), with the classes that may call it and on which thread, under which edge. The one-writer
     * test above sees direct assignments only; this one sees the writes that go through the slot's methods.
     */
    private static final Map<String, String> SLOT_WRITERS_CALLED_BY = new java.util.TreeMap<>();

    static {
        SLOT_WRITERS_CALLED_BY.put("fill <- Pipeline", "the dispatching thread: a claimed slot, before it is published "
                + "(the publish is the release the stages acquire)");
        SLOT_WRITERS_CALLED_BY.put("adoptCreatedAggregate <- RingRepository", "handler thread: a creation in the "
                + "command's Unit of Work gives the slot the new aggregate's holder");
        SLOT_WRITERS_CALLED_BY.put("failBeforeHandler <- HandleStage", "handler thread: the aggregate could not begin "
                + "the command");
        SLOT_WRITERS_CALLED_BY.put("takeFailureBeforeHandler <- HandleStage", "handler thread: hands that failure to "
                + "the handler interceptors");
        SLOT_WRITERS_CALLED_BY.put("prepareReRun <- HandleStage", "handler thread: forgets a run the store refused "
                + "before handling it again");
        SLOT_WRITERS_CALLED_BY.put("recordStageFailure <- StageGuard", "any stage thread, on the slot it holds: a "
                + "failure escaped the stage (its sequence, published after, orders the write for the next stages)");
        SLOT_WRITERS_CALLED_BY.put("clear <- CompleteStage", "the completing thread (complete stage, or a store thread "
                + "that completes): after the callback, before the slot goes back to the dispatchers");
        SLOT_WRITERS_CALLED_BY.put("failBeforeHandler <- Pipeline", "the shutdown thread, after every stage thread "
                + "ended (their ends order it): a command never handled fails");
    }

    @Test
    void theSlotsNamedWritersAreCalledOnlyByTheClassesNamedForThem() {
        assertThat(writersCalledBy(CommandSlot.class)).as("the slot's writing methods and the classes that call them")
                                                     .isEqualTo(SLOT_WRITERS_CALLED_BY.keySet());
    }

    /**
     * The command's ledger ({@link CommandLedger}): who calls each method that assigns one of its fields, on which
     * thread (its lists, changed in place by {@code borrow} from {@code NestedDispatch} and {@code createdAlongside} from
     * {@code RingRepository}, on the handler thread, are not assignments).
     */
    private static final Map<String, String> LEDGER_WRITERS_CALLED_BY = Map.of(
            "ranOn <- HandleStage", "handler thread: the handler runs on its aggregate's state of a generation",
            "runInPlaceOn <- NestedDispatch", "handler thread: a nested command runs in place in the outer command's "
                    + "slot, and gives the target back to the enclosing one when it is done",
            "forgetRun <- CommandSlot", "handler thread: the slot forgets a run the store refused",
            "clear <- CommandSlot", "the completing thread, as the slot is cleared");

    @Test
    void theLedgersNamedWritersAreCalledOnlyByTheClassesNamedForThem() {
        assertThat(writersCalledBy(CommandLedger.class)).as("the ledger's writing methods and the classes that call them")
                                                       .isEqualTo(LEDGER_WRITERS_CALLED_BY.keySet());
    }

    /** "method <- caller" for each method of {@code type} that sets one of its fields, by each class but its own. */
    private static Set<String> writersCalledBy(Class<?> type) {
        JavaClass owner = MAIN.get(type);
        Set<String> calls = new TreeSet<>();
        for (com.tngtech.archunit.core.domain.JavaMethod method : owner.getMethods()) {
            if (method.getModifiers().contains(JavaModifier.PRIVATE) || method.getModifiers().contains(JavaModifier.STATIC)
                    || method.getFieldAccesses().stream().noneMatch(
                            access -> access.getAccessType() == JavaFieldAccess.AccessType.SET
                                    && access.getTargetOwner().equals(owner))) {
                continue;
            }
            for (com.tngtech.archunit.core.domain.JavaMethodCall call : method.getCallsOfSelf()) {
                String caller = outermost(call.getOriginOwner()).getSimpleName();
                if (!caller.equals(owner.getSimpleName())) {
                    calls.add(method.getName() + " <- " + caller);
                }
            }
        }
        return calls;
    }

    /**
     * The slot's events are one list, never assigned, changed in place: who may touch it, and how. Written on the
     * handler thread only, while the handle stage holds the slot (the sequence it publishes orders them before the
     * later stages' reads); read by the store and publish stages after it.
     */
    private static final Map<String, String> SLOT_EVENTS_TOUCHED_BY = Map.ofEntries(
            Map.entry("HandleStage", "handler thread: clears it for a command (and a re-run), adds the intercepted events"),
            Map.entry("NestedDispatch", "handler thread: takes back from the outer slot's events what a failed command "
                    + "run in place added"),
            Map.entry("StoreStage", "store thread: reads them to append them, after the handle stage"),
            Map.entry("StoreTransaction", "store thread: reads them to hand them to the subscribers in the transaction"),
            Map.entry("HeldEffects", "store thread: reads them to append each command's events before what its "
                    + "subscribers published, where they ran before the append"),
            Map.entry("StoreReadBack", "store thread: reads the stored ones to read each new payload type back"),
            Map.entry("CommitDeadline", "store thread: reads their timestamps before an attempt appends them"),
            Map.entry("StoreRecovery", "store thread: reads them for the facts the policy is given (whether a "
                    + "refused command creates an aggregate); the policy itself reads no slot"),
            Map.entry("RefusedBatch", "store thread: reads them to append a group of a refused batch again"),
            Map.entry("StoreFailureNotice", "store thread: reads them to name a failed command's aggregate when it has "
                    + "no target"),
            Map.entry("PublishStage", "publish thread: reads them to hand them to the subscribers, after the handle "
                    + "stage"));

    @Test
    void theSlotsEventsAreTouchedOnlyByTheClassesNamedForThem() {
        Set<String> touching = new TreeSet<>();
        for (JavaFieldAccess access : MAIN.get(CommandSlot.class).getField("events").getAccessesToSelf()) {
            touching.add(outermost(access.getOriginOwner()).getSimpleName());
        }
        touching.remove("CommandSlot");
        assertThat(touching).as("classes that touch the slot's events").isEqualTo(SLOT_EVENTS_TOUCHED_BY.keySet());
    }

    /**
     * The slot's events through the views it gives its Unit of Work and its aggregates' holders
     * ({@code SlotUnitOfWork.Command.events()}, {@code AggregateHolder.Borrower.events()}): used by those two alone
     * (the Unit of Work adds the events published on the event store and takes back one removed; the holder's sink
     * adds the events the aggregate applies, and a rebuild reads them), on the handler thread.
     */
    @Test
    void theSlotsEventsThroughItsViewsAreTouchedOnlyByItsUnitOfWorkAndItsHolders() {
        Set<String> calling = new TreeSet<>();
        for (Class<?> view : List.of(SlotUnitOfWork.Command.class, AggregateHolder.Borrower.class, CommandSlot.class)) {
            MAIN.get(view).getMethod("events").getCallsOfSelf()
                .forEach(call -> calling.add(outermost(call.getOriginOwner()).getSimpleName()));
        }
        assertThat(calling).as("classes that call events() on the slot's views")
                           .isEqualTo(Set.of("SlotUnitOfWork", "AggregateHolder"));
    }

    /** The core package's layers, top to bottom (package-info.java reads in this order). */
    private static final Map<String, Set<String>> CORE_LAYERS = new java.util.LinkedHashMap<>();

    static {
        CORE_LAYERS.put("Bus", Set.of("RingCommandBus", "RingbusConfigurerModule", "OwnRepositoryAggregates"));
        CORE_LAYERS.put("Front door", Set.of("Dispatches", "Admission", "RingLifecycle", "NestedDispatch",
                                             "RingAggregates", "RefusalLog",
                                             "MirroredSubscriptions"));
        CORE_LAYERS.put("Pipeline", Set.of("Pipeline", "StagePlan", "RingStages", "StageGuard", "LeftInterrupts",
                                           "PreloadStage", "PreloadThenHandle", "HandleStage", "WholeCommandRunner",
                                           "StoreShard", "StoreStage", "GapBound", "CommitDeadline", "StoreFailures",
                                           "StoreAttempt",
                                           "StoreFailureNotice", "FailFastReads", "StoreOutage", "MinuteCount",
                                           "StoreHealth", "StoreReadBack", "StoreTransaction", "StoreUnitOfWork",
                                           "HeldEffects", "GivenUpState",
                                           "IsolatingStoreRecovery", "RefusedBatch",
                                           "StoreRecovery", "OneByOnePublish", "PublishStage", "CompleteStage", "AdaptiveWaitStrategy",
                                           "ReRuns", "ReRunBarrier"));
        CORE_LAYERS.put("Slot core", Set.of("CommandSlot", "CommandLedger", "SlotUnitOfWork", "AggregateHolder", "RingRepository", "RingConflictResolver",
                                            "PreloadedAggregates", "OutsideRingRepository", "StoreMarks", "ColdReads",
                                            "AggregateCache", "CacheEvictions", "MessageDelivery", "CommandRoutes",
                                            "OwnRepositoryRoute", "InstanceCommandInvoker", "AggregateCommandNames",
                                            "PipelineThreads", "CallbackThread"));
        CORE_LAYERS.put("Adapters", Set.of("AxonInternals", "AxonServerFailures", "AggregateConfigurerSettings", "OffPipelineSnapshots",
                                           "OffPipelineSnapshotter", "TransactionalHandlers"));
        CORE_LAYERS.put("Vocabulary", Set.of("RingEventStore", "PublishedEventCollector", "DeferredAppends", "RingSettings", "Defaults",
                                             "Backoff", "AnnotatedTargetResolver", "NamedTargets", "FullRingPolicy", "PublishMode",
                                             "WaitStrategyChoice", "Topology", "RingFullException",
                                             "CommitOutcomeUnknownException", "PipelineWaitException",
                                             "PipelineMonitor", "StageTimes", "StageThreadTimes", "StoreFailure", "StoreBatchListener",
                                             "RunOnce", "TracedCallback"));
    }

    @Test
    void everyClassOfTheCorePackageIsInOneLayer() {
        Set<String> placed = new TreeSet<>();
        CORE_LAYERS.values().forEach(placed::addAll);
        Set<String> core = new TreeSet<>();
        for (JavaClass type : MAIN) {
            if (type.getPackageName().equals("io.github.ringbus") && !type.getSimpleName().equals("package-info")
                    && type.getEnclosingClass().isEmpty()) {
                core.add(type.getSimpleName());
            }
        }
        assertThat(placed).as("the layers name every top-level class of io.github.ringbus, and no other")
                          .isEqualTo(core);
    }

    /** A row of docs/design.md's table of the core: its layer, then its class. */
    private static final java.util.regex.Pattern CORE_TABLE_ROW =
            java.util.regex.Pattern.compile("(?m)^\\| ([A-Za-z ]+) \\| `([A-Za-z]+)` \\|");

    @Test
    void designMdNamesEveryClassOfTheCoreInItsLayer() throws java.io.IOException {
        String design = java.nio.file.Files.readString(java.nio.file.Path.of("docs/design.md"));
        int start = design.indexOf("## The core, file by file");
        assertThat(start).as("docs/design.md has its section \"The core, file by file\"").isNotNegative();
        int end = design.indexOf("\n## ", start + 1);
        Map<String, String> documented = new java.util.TreeMap<>();
        java.util.regex.Matcher row = CORE_TABLE_ROW.matcher(design.substring(start, end < 0 ? design.length() : end));
        while (row.find()) {
            documented.put(row.group(2), row.group(1));
        }
        Map<String, String> layers = new java.util.TreeMap<>();
        CORE_LAYERS.forEach((layer, members) -> members.forEach(member -> layers.put(member, layer)));
        assertThat(documented).as("docs/design.md's table of the core: class -> layer").isEqualTo(layers);
    }

    /**
     * Each layer of the core package uses only the layers below it: the bus (and its Axon configuration support)
     * over the front door (admission, lifecycle, nested dispatch), over the pipeline (the ring, its stages and
     * threads), over the slot core (slot, Unit of Work, aggregates in memory, routes), over the adapters of Axon's
     * internals; the vocabulary (settings, enums, exceptions, monitors, the event store) is used by all and uses
     * none of them.
     */
    @Test
    void eachLayerOfTheCorePackageUsesOnlyTheLayersBelowIt() {
        List<String> names = new ArrayList<>(CORE_LAYERS.keySet());
        com.tngtech.archunit.library.Architectures.LayeredArchitecture layers =
                com.tngtech.archunit.library.Architectures.layeredArchitecture().consideringOnlyDependenciesInLayers();
        for (String layer : names) {
            Set<String> members = CORE_LAYERS.get(layer);
            layers = layers.layer(layer).definedBy(
                    com.tngtech.archunit.base.DescribedPredicate.describe(
                            layer, (JavaClass type) -> type.getPackageName().equals("io.github.ringbus")
                                    && members.contains(outermost(type).getSimpleName())));
        }
        for (int i = 0; i < names.size(); i++) {
            List<String> above = names.subList(0, i);
            layers = i == 0 ? layers.whereLayer(names.get(i)).mayNotBeAccessedByAnyLayer()
                    : layers.whereLayer(names.get(i)).mayOnlyBeAccessedByLayers(above.toArray(String[]::new));
        }
        layers.check(MAIN);
    }

    /**
     * The classes of the core package that depend on one another in a loop (top-level classes, each with its nested
     * ones), each loop with why it is still there. A new loop, or a loop that grew, fails here; one that is cut is
     * taken off this list.
     */
    private static final Map<Set<String>, String> KNOTS = Map.of();

    @Test
    void theCoreHasNoDependencyLoopBeyondTheNamedKnots() {
        Map<String, Set<String>> uses = new java.util.TreeMap<>();
        for (JavaClass type : MAIN) {
            if (!type.getPackageName().equals("io.github.ringbus")) {
                continue;
            }
            String from = outermost(type).getSimpleName();
            Set<String> targets = uses.computeIfAbsent(from, t -> new TreeSet<>());
            type.getDirectDependenciesFromSelf().forEach(dependency -> {
                JavaClass target = dependency.getTargetClass();
                if (target.getPackageName().equals("io.github.ringbus") && !target.isArray()) {
                    String to = outermost(target).getSimpleName();
                    if (!to.equals(from)) {
                        targets.add(to);
                    }
                }
            });
        }
        assertThat(stronglyConnected(uses)).as("loops among the core's classes").isEqualTo(KNOTS.keySet());
    }

    /** Tarjan's algorithm: the strongly connected components of more than one class. */
    private static Set<Set<String>> stronglyConnected(Map<String, Set<String>> uses) {
        Map<String, Integer> index = new java.util.HashMap<>();
        Map<String, Integer> low = new java.util.HashMap<>();
        java.util.Deque<String> stack = new java.util.ArrayDeque<>();
        Set<String> onStack = new java.util.HashSet<>();
        Set<Set<String>> components = new java.util.HashSet<>();
        for (String start : uses.keySet()) {
            if (!index.containsKey(start)) {
                connect(start, uses, index, low, stack, onStack, components);
            }
        }
        return components;
    }

    private static void connect(String node, Map<String, Set<String>> uses, Map<String, Integer> index,
                                Map<String, Integer> low, java.util.Deque<String> stack, Set<String> onStack,
                                Set<Set<String>> components) {
        index.put(node, index.size());
        low.put(node, index.get(node));
        stack.push(node);
        onStack.add(node);
        for (String next : uses.getOrDefault(node, Set.of())) {
            if (!index.containsKey(next)) {
                connect(next, uses, index, low, stack, onStack, components);
                low.put(node, Math.min(low.get(node), low.get(next)));
            } else if (onStack.contains(next)) {
                low.put(node, Math.min(low.get(node), index.get(next)));
            }
        }
        if (low.get(node).equals(index.get(node))) {
            Set<String> component = new TreeSet<>();
            String member;
            do {
                member = stack.pop();
                onStack.remove(member);
                component.add(member);
            } while (!member.equals(node));
            if (component.size() > 1) {
                components.add(component);
            }
        }
    }

    private static JavaClass outermost(JavaClass type) {
        JavaClass outer = type;
        while (outer.getEnclosingClass().isPresent()) {
            outer = outer.getEnclosingClass().get();
        }
        return outer;
    }

    /**
     * The store component, group commit in one place (docs/design.md, "The store area, file by file"): the stage, its
     * shards and their bound, one attempt, the read-back, the recovery policy and its carry-out, the given-up rule,
     * the failure reading and reporting, the outage, health and its clocks.
     */
    private static final Set<String> STORE_COMPONENT = Set.of(
            "StoreStage", "StoreShard", "GapBound", "StoreTransaction", "StoreReadBack", "StoreAttempt", "StoreRecovery",
            "IsolatingStoreRecovery", "RefusedBatch", "GivenUpState", "StoreFailures", "StoreFailureNotice",
            "StoreOutage", "FailFastReads", "StoreHealth", "MinuteCount", "StoreUnitOfWork", "HeldEffects",
            "CommitDeadline");

    /** Its doors: each class of the component the rest of the core may use, and who uses it. */
    private static final Map<String, Set<String>> STORE_DOORS = Map.ofEntries(
            Map.entry("StoreStage", Set.of("Pipeline")), // built and wired into the ring
            Map.entry("StoreShard", Set.of("Pipeline")),
            Map.entry("GapBound", Set.of("Pipeline")),
            Map.entry("CommitDeadline", Set.of("Pipeline")), // made once per bus from its engine's gap timeout
            // the bus's one policy, made from the stage plan
            Map.entry("IsolatingStoreRecovery", Set.of("Pipeline")),
            // a re-run asks it which commands may run again
            Map.entry("StoreRecovery", Set.of("Pipeline", "HandleStage")),
            Map.entry("StoreOutage", Set.of("Pipeline")),
            Map.entry("StoreHealth", Set.of("Pipeline")), // read for the bus's health
            // the bus's reads fail fast during an outage
            Map.entry("FailFastReads", Set.of("Pipeline", "RingCommandBus")),
            // a subscriber's send is held until its attempt commits
            Map.entry("HeldEffects", Set.of("Dispatches")),
            Map.entry("StoreUnitOfWork", Set.of("Dispatches"))); // ... found through the sender's Unit of Work

    /** What the component uses of the rest of the core: the slot and its parts, the hand-back, the event store. */
    private static final Set<String> STORE_USES = Set.of(
            "CommandSlot", "CommandLedger", "SlotUnitOfWork", "AggregateHolder", "ReRuns", "RingEventStore",
            "OneByOnePublish", "LeftInterrupts", "RunOnce", "AxonInternals", "AxonServerFailures",
            "CommitOutcomeUnknownException", "StoreFailure", "StoreBatchListener", "DeferredAppends", "TracedCallback");

    /**
     * The store component's boundary: the rest of the core enters it only through its doors, and it uses only what
     * {@link #STORE_USES} names. A change to either is a decision about the component: make it here, on purpose.
     */
    @Test
    void theStoreComponentIsEnteredOnlyThroughItsDoorsAndUsesOnlyWhatItNames() {
        Map<String, Set<String>> doors = new java.util.TreeMap<>();
        Set<String> uses = new TreeSet<>();
        for (JavaClass type : MAIN) {
            if (!type.getPackageName().equals("io.github.ringbus")) {
                continue;
            }
            String from = outermost(type).getSimpleName();
            type.getDirectDependenciesFromSelf().forEach(dependency -> {
                JavaClass target = dependency.getTargetClass();
                if (!target.getPackageName().equals("io.github.ringbus") || target.isArray()) {
                    return;
                }
                String to = outermost(target).getSimpleName();
                if (!STORE_COMPONENT.contains(from) && STORE_COMPONENT.contains(to)) {
                    doors.computeIfAbsent(to, door -> new TreeSet<>()).add(from);
                } else if (STORE_COMPONENT.contains(from) && !STORE_COMPONENT.contains(to)) {
                    uses.add(to);
                }
            });
        }
        assertThat(doors).as("the store component's doors, and who enters by each")
                         .isEqualTo(new java.util.TreeMap<>(STORE_DOORS));
        assertThat(uses).as("what the store component uses of the rest of the core").isEqualTo(new TreeSet<>(STORE_USES));
    }

    @Test
    void packagesHaveNoCycles() {
        slices().matching("io.github.(ringbus).(**)").should().beFreeOfCycles().check(MAIN);
        slices().matching("io.github.ringbus.(*)..").should().beFreeOfCycles().check(MAIN);
    }

    /**
     * The store's recovery policy decides from a small value of facts ({@code StoreRecovery.Command}, the attempt, the
     * group's size and where its culprit is), never from the ring's slot: a new policy, or a new action of it, is
     * written and tested without a slot, and {@code RefusedBatch} carries out what it decides.
     */
    @Test
    void theRecoveryPolicyIsGivenFactsNotTheSlot() {
        noClasses().that().haveSimpleName("IsolatingStoreRecovery")
                   .should().dependOnClassesThat().haveSimpleName("CommandSlot")
                   .check(MAIN);
    }

    @Test
    void theBusDependsOnNoPackageAroundIt() {
        noClasses().that().resideInAPackage("io.github.ringbus")
                   .should().dependOnClassesThat().resideInAnyPackage("io.github.ringbus.spring..",
                                                                      "io.github.ringbus.jdbc..",
                                                                      "io.github.ringbus.jpa..",
                                                                      "io.github.ringbus.identifiers..",
                                                                      "io.github.ringbus.distributed..")
                   .check(MAIN);
    }

    @Test
    void everyAutoConfigurationIsListedInSpringBootsImports() throws java.io.IOException {
        // An auto-configuration missing from the list is never loaded: the application silently runs without it.
        List<String> listed = java.nio.file.Files.readAllLines(java.nio.file.Path.of(
                "src/main/resources/META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports"));
        Set<String> autoConfigurations = new TreeSet<>();
        for (JavaClass type : MAIN) {
            if (type.isAnnotatedWith("org.springframework.boot.autoconfigure.AutoConfiguration")) {
                autoConfigurations.add(type.getName());
            }
        }
        assertThat(autoConfigurations).isNotEmpty();
        assertThat(listed).containsAll(autoConfigurations);
    }

    @Test
    void onlyTheJpaPackageNeedsHibernate() {
        // Hibernate is an optional dependency: an application on Axon's JDBC engine, or on no database, has none of it.
        noClasses().that().resideOutsideOfPackage("io.github.ringbus.jpa..")
                   .should().dependOnClassesThat().resideInAnyPackage("org.hibernate..", "jakarta.persistence..")
                   .check(MAIN);
    }

    @Test
    void onlyTheSpringModuleNeedsSpring() {
        // Spring is an optional dependency: a plain Axon application has none of it on its class path.
        noClasses().that().resideOutsideOfPackage("io.github.ringbus.spring..")
                   .should().dependOnClassesThat().resideInAnyPackage("org.springframework..")
                   .check(MAIN);
    }

    @Test
    void theDistributedPackageNeedsNeitherSpringNorThePackagesAroundTheBus() {
        // JGroups and Axon's connector are optional dependencies: only io.github.ringbus.distributed touches them.
        noClasses().that().resideInAPackage("io.github.ringbus.distributed..")
                   .should().dependOnClassesThat().resideInAnyPackage("io.github.ringbus.spring..",
                                                                      "io.github.ringbus.jdbc..",
                                                                      "io.github.ringbus.identifiers..")
                   .check(MAIN);
        noClasses().that().resideOutsideOfPackages("io.github.ringbus.distributed..", "io.github.ringbus.spring..")
                   .should().dependOnClassesThat().resideInAnyPackage("org.jgroups..",
                                                                      "org.axonframework.extensions.jgroups..")
                   .check(MAIN);
    }

    @Test
    void thePackagesAroundTheBusUseEachOtherNot() {
        noClasses().that().resideInAnyPackage("io.github.ringbus.jdbc..", "io.github.ringbus.identifiers..")
                   .should().dependOnClassesThat().resideInAnyPackage("io.github.ringbus.spring..")
                   .check(MAIN);
    }
}
