package io.github.ringbus;

import org.axonframework.eventsourcing.EventSourcedAggregate;

import java.util.HashMap;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;

/**
 * The preload stage's part of one aggregate type: its cache of aggregates in memory and the reads ahead of its
 * missing ones. One thread only, the one that preloads (the preload stage's; on {@link Topology#COMPACT} the one
 * handler thread, which also runs the commands it waits for in place), held by an assertion in every method (on in
 * the tests). The aggregates it hands out are read through the holder's view of the repository
 * ({@link AggregateHolder.Source}); other threads see an aggregate only through the holder its slot carries.
 *
 * @param <T> the aggregate type
 * <p>
 * Tests: {@code PreloadingThreadTest}, {@code behaviour.ReadAheadTest}, {@code CacheEvictionTest}.
 */
final class PreloadedAggregates<T> {

    /** Reads the aggregates and makes their holders see the bus's evictions (the repository). */
    private final AggregateHolder.Source<T> source;
    private final AggregateCache<AggregateHolder<T>> cache;
    /** The bus's threads that read missing aggregates ahead of the preload stage. */
    private final ColdReads coldReads;
    /**
     * Aggregates missing from the cache whose read from the store runs ahead of their command ({@link #readAhead}),
     * by identifier; emptied at the end of each of the preload stage's batches.
     */
    private final HashMap<String, ReadAhead<T>> readsAhead = new HashMap<>();
    /** The aggregate {@link #preload} is about to read itself while the preload stage looks ahead; or null. */
    private String readingHere;

    /**
     * @param source            reads the aggregates (the repository of their type)
     * @param cacheSize         the most aggregates of this type to keep in memory
     * @param completedSequence the ring sequence up to which every command has completed
     * @param coldReads         the threads that read missing aggregates ahead
     */
    PreloadedAggregates(AggregateHolder.Source<T> source, int cacheSize, LongSupplier completedSequence,
                        ColdReads coldReads) {
        this.source = Objects.requireNonNull(source, "source");
        this.cache = new AggregateCache<>(cacheSize, completedSequence);
        this.coldReads = Objects.requireNonNull(coldReads, "coldReads");
    }

    /**
     * The one thread that preloads (the preload stage's; on {@link Topology#COMPACT} the one handler thread, which
     * also runs the commands it waits for in place): set by its first call, and checked by {@code assert}, so only
     * with assertions on (the tests), at no cost in production. Holds "preload-stage thread only".
     */
    private final AtomicReference<Thread> preloadingThread =
            new AtomicReference<>();

    private boolean onThePreloadingThread() {
        Thread current = Thread.currentThread();
        return preloadingThread.compareAndSet(null, current) || preloadingThread.get() == current;
    }

    private String preloadedElsewhere(String method) {
        return "PreloadedAggregates." + method + " is for the preload stage's thread only [" + preloadingThread.get()
                + "], but ran on [" + Thread.currentThread() + "]";
    }

    /**
     * @return whether the aggregate is in memory (cached, or created by a command in the ring); nothing is read.
     *         Preload-stage thread only
     */
    boolean inMemory(String identifier) {
        assert onThePreloadingThread() : preloadedElsewhere("inMemory");
        return cache.contains(identifier);
    }

    /**
     * Puts the aggregate with the given identifier in memory for the command in ring slot {@code slotSequence}: from
     * the cache, or read from the event store on a miss. Preload-stage thread only.
     *
     * @param identifier   the command's target aggregate identifier
     * @param creates      whether the command may create the aggregate
     * @param withoutRead  whether the command always creates the aggregate and the store refuses a second creation
     *                     ({@link RingRepository#createsWithoutRead}): then a miss reads nothing
     * @param slotSequence the ring sequence of the command's slot
     * @param onMiss       run before this thread reads a missing aggregate itself (the preload stage then starts
     *                     reading the missing aggregates of the commands behind this one, {@link #readAhead}); may
     *                     be null
     * @return the holder, or null when the aggregate does not exist and the command cannot create it
     * @throws Exception when the event store cannot be read
     */
    AggregateHolder<T> preload(String identifier, boolean creates, boolean withoutRead, long slotSequence,
                               Runnable onMiss) throws Exception {
        assert onThePreloadingThread() : preloadedElsewhere("preload");
        AggregateHolder<T> holder = cache.get(identifier);
        if (holder == null) {
            // Whatever enters the cache takes the read ahead of it, if any, or drops it: a read ahead is used only
            // by the first holder of its aggregate since it started, so no command of that aggregate can have been
            // handled (and stored) after the read began.
            ReadAhead<T> ahead = readsAhead.isEmpty() ? null : readsAhead.remove(identifier);
            if (withoutRead) {
                holder = new AggregateHolder<>(source, identifier);
                holder.loaded(null);
            } else if (ahead != null) {
                holder = ahead.holder();
                holder.loaded(ahead.await());
            } else {
                if (onMiss != null) {
                    readingHere = identifier; // not read ahead as well
                    try {
                        onMiss.run();
                    } finally {
                        readingHere = null;
                    }
                }
                holder = new AggregateHolder<>(source, identifier);
                holder.loaded(source.readFromStore(identifier, holder.sink(), List.of()));
            }
            if (holder.aggregate() == null && !creates) {
                return null;
            }
            // Referenced before it is cached: the cache never drops a holder whose command is still in the ring, and
            // one put while every older holder is in flight would otherwise be dropped at once (its next command
            // would then read the store before this one's events are there).
            holder.referencedBy(slotSequence);
            cache.put(identifier, holder);
            return holder;
        }
        holder.referencedBy(slotSequence);
        return holder;
    }

    /**
     * Starts reading from the store, on the bus's {@link ColdReads} threads, an aggregate that a command behind the
     * one being preloaded needs and that is not in the cache; {@link #preload} takes the result when that command
     * comes. Preload-stage thread only. Safe because the aggregate is missing from the cache: every command of it
     * that came before is complete (the cache never drops an aggregate with a command in the ring), so the store
     * holds all this node will ever store of it until a holder of it enters the cache again, which takes this read
     * or drops it.
     *
     * @param identifier the aggregate's identifier
     * @return true when a read was started; false when the aggregate is cached, already being read (ahead, or by
     * the miss that looks ahead), or reads ahead are off
     */
    boolean readAhead(String identifier) {
        assert onThePreloadingThread() : preloadedElsewhere("readAhead");
        if (!coldReads.enabled() || cache.contains(identifier) || readsAhead.containsKey(identifier)
                || identifier.equals(readingHere)) {
            return false;
        }
        AggregateHolder<T> holder = new AggregateHolder<>(source, identifier);
        CompletableFuture<EventSourcedAggregate<T>> read;
        try {
            read = CompletableFuture.supplyAsync(() -> {
                try {
                    return source.readFromStore(identifier, holder.sink(), List.of());
                } catch (Exception e) {
                    throw new CompletionException(e);
                }
            }, coldReads.executor());
        } catch (RejectedExecutionException closed) {
            return false; // the bus is shutting down: its command reads for itself, if it still runs
        }
        readsAhead.put(identifier, new ReadAhead<>(holder, read));
        return true;
    }

    /**
     * Drops the reads ahead that no command took (their aggregate entered the cache another way first, or their
     * command failed before it reached it); a read still running finishes unused. Preload-stage thread, at the end
     * of each of its batches.
     */
    void discardReadsAhead() {
        readsAhead.clear();
    }

    /** An aggregate's holder and the read of its events, started ahead of its command. */
    private record ReadAhead<T>(AggregateHolder<T> holder, CompletableFuture<EventSourcedAggregate<T>> read) {

        /** Waits for the read (not interruptibly, as a read on this thread would) and returns its result. */
        EventSourcedAggregate<T> await() throws Exception {
            try {
                return read.join();
            } catch (CompletionException failed) {
                Throwable cause = failed.getCause() == null ? failed : failed.getCause();
                if (cause instanceof Exception exception) {
                    throw exception;
                }
                throw (Error) cause;
            }
        }
    }
}
