/**
 * The command bus. Its public types are the whole of what a user relies on ({@code ArchitectureTest} lists them):
 * {@link io.github.ringbus.RingCommandBus} and its builder; the settings' enums ({@link io.github.ringbus.Topology},
 * {@link io.github.ringbus.PublishMode}, {@link io.github.ringbus.FullRingPolicy},
 * {@link io.github.ringbus.WaitStrategyChoice}) and the default command target resolver
 * ({@link io.github.ringbus.AnnotatedTargetResolver}); the exceptions a dispatch may report
 * ({@link io.github.ringbus.RingFullException}, {@link io.github.ringbus.PipelineWaitException},
 * {@link io.github.ringbus.CommitOutcomeUnknownException}); the monitor types
 * ({@link io.github.ringbus.PipelineMonitor}, {@link io.github.ringbus.StageTimes},
 * {@link io.github.ringbus.StoreBatchListener}) and what the bus reports for health and metrics
 * ({@link io.github.ringbus.StoreFailure}, {@link io.github.ringbus.StageThreadTimes}); how a handler marks its command
 * never to be handled twice ({@link io.github.ringbus.RunOnce}); the event store that splits store and publish
 * ({@link io.github.ringbus.RingEventStore}, with its builder); and the module that routes an Axon configuration's
 * aggregates through the ring ({@link io.github.ringbus.RingbusConfigurerModule}).
 * <p>
 * Everything else here is the pipeline's machinery, package-private so that it can change without breaking anyone
 * (as the LMAX Disruptor keeps its {@code ProcessingSequenceBarrier}, and Axon its Disruptor bus, in one package).
 * It reads in layers, top to bottom, each using only the ones below it ({@code ArchitectureTest} keeps it so):
 * <ol>
 *   <li><b>the bus</b>: {@code RingCommandBus}, and what routes an Axon configuration's aggregates through it
 *       ({@code RingbusConfigurerModule}, {@code OwnRepositoryAggregates});</li>
 *   <li><b>the front door</b>: {@code Dispatches} (the way in: span, interceptors, monitor, gate, slot),
 *       {@code Admission} (a slot for each command, or its refusal), {@code RingLifecycle} (the gate dispatchers pass,
 *       start and shutdown), {@code NestedDispatch} (commands sent from the ring's own threads),
 *       {@code RingAggregates}, {@code MirroredSubscriptions} (handlers also subscribed on another bus);</li>
 *   <li><b>the pipeline</b>: {@code Pipeline} with its {@code StagePlan} (the ring's shape, stated once), one class per
 *       stage ({@code PreloadStage}, {@code HandleStage} and {@code WholeCommandRunner}, {@code StoreStage},
 *       {@code PublishStage}, {@code CompleteStage}; {@code StoreShard} and {@code PreloadThenHandle} run two on one
 *       thread), {@code StageGuard} around each, {@code AdaptiveWaitStrategy}, {@code ReRuns} with its
 *       {@code ReRunBarrier} (commands built on events the store refused are handled again), the store's recovery
 *       ({@code StoreAttempt}, what an attempt came to; {@code StoreRecovery}, what happens next, the policy
 *       {@code IsolatingStoreRecovery} with its limits; {@code RefusedBatch}, which carries it out;
 *       {@code StoreFailureNotice}, what each caller is told), {@code FailFastReads} (reads while the store is
 *       away);</li>
 *   <li><b>the slot core</b>: the ring's slot {@code CommandSlot} and its Unit of Work {@code SlotUnitOfWork}, the
 *       aggregates in memory ({@code RingRepository}, Axon's repository for the handler code;
 *       {@code PreloadedAggregates}, the preload thread's part of it: {@code AggregateCache} and the reads ahead of
 *       missing aggregates on {@code ColdReads}; {@code AggregateHolder}: who owns an aggregate at each moment), routes
 *       ({@code CommandRoutes}), the stage threads ({@code PipelineThreads}) and the callback thread
 *       ({@code CallbackThread}: callbacks that may wait, off the stage threads);</li>
 *   <li><b>the adapters</b> of what Axon does not make public: {@code AxonInternals}, {@code AggregateConfigurerSettings},
 *       off-pipeline snapshots; and of Axon Server's error codes ({@code AxonServerFailures});</li>
 *   <li>and, used by all, <b>the vocabulary</b>: settings ({@code RingSettings}, {@code Defaults}), the public enums,
 *       exceptions and monitor types, the event store, the caller's callback with its span ({@code TracedCallback}).</li>
 * </ol>
 * The default topology ({@link io.github.ringbus.PublishMode#IN_TRANSACTION}):
 * <pre>
 *   dispatch --&gt; preload --&gt; handle --&gt; store (append + subscribers, one transaction) --&gt; complete --&gt; callback
 *   (an application's callback on the callback thread; Axon's FutureCallback of sendAndWait on the complete stage's)
 * </pre>
 * With {@link io.github.ringbus.PublishMode#PARALLEL}:
 * <pre>
 *                                   +--&gt; store ----+
 *   dispatch --&gt; preload --&gt; handle +              +--&gt; complete --&gt; callback
 *    (callers)                      +--&gt; publish --+
 *                   |         |          |     |          |
 *   finds handler,  |  runs the handler  |  hands events  |  commits the Unit of Work,
 *   target, loads   |  on the thread     |  to subscribers|  reports, calls back once
 *   the aggregate   |  owning the        |                |
 *   (cache / store) |  aggregate         appends events of many commands in one call
 * </pre>
 * A slot is claimed by a dispatcher, filled, and handed to the ring; each stage waits on the sequence of the stage(s)
 * before it; the dispatchers wait only on the complete stage(s), which free the slot. Every field of a slot is
 * assigned directly by one stage only ({@code ArchitectureTest} fails on an assignment from another class) and read by
 * later ones, so the ring's sequences give every hand-off its memory ordering and the fields are plain. A later stage
 * that must change an earlier stage's field (a stage guard recording a failure, a re-run resetting what the handler
 * wrote, the store stage isolating a refused batch) does so through a method of the slot named for it, while that
 * stage holds the slot ({@code ArchitectureTest} names each class that calls such a method, with its thread). The
 * slot's events are one list changed in place, on the handler thread only (the handle
 * stage, the slot's Unit of Work, the aggregate's holder, a command run in place), and read by the store and publish
 * stages after it ({@code ArchitectureTest} names each class that touches them). One decision is not ordered by the
 * ring: who completes a command, taken by a compare-and-set, because at shutdown the thread that completes what the
 * halted stages left may meet a stage thread that user code still holds (see {@code CommandSlot}).
 * <p>
 * Handle stages: {@code n} instances run side by side over every slot, each handling only the slots whose segment
 * (the hash of the target aggregate's identifier) is its own, so one aggregate's commands run on one thread in ring
 * order while different aggregates run in parallel.
 * <p>
 * The packages around this one use its public types only: {@code spring} (Spring Boot auto-configuration),
 * {@code jdbc} (a JDBC transaction manager for the store stage's batches), {@code identifiers} (time-based event
 * identifiers), {@code distributed} (the ring as the local segment of Axon's {@code DistributedCommandBus}).
 * {@code ArchitectureTest} keeps it so.
 */
package io.github.ringbus;
