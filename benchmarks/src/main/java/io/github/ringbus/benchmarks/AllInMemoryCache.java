package io.github.ringbus.benchmarks;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.axonframework.common.Registration;
import org.axonframework.common.caching.Cache;

/**
 * An Axon {@link Cache} that keeps every entry until it is removed, so that all benchmark aggregates stay
 * cached for the whole run.
 *
 * <p>Axon's {@code WeakReferenceCache} is not enough here: Axon's repositories put a fresh
 * {@code AggregateCacheEntry} into the cache on every save, nothing else holds on to it, and so the next
 * garbage collection empties the cache and the next command replays the aggregate from the event store.
 */
public final class AllInMemoryCache implements Cache {

    private final ConcurrentMap<Object, Object> entries = new ConcurrentHashMap<>();

    @Override
    @SuppressWarnings("unchecked")
    public <K, V> V get(K key) {
        return (V) entries.get(key);
    }

    @Override
    public void put(Object key, Object value) {
        entries.put(key, value);
    }

    @Override
    public boolean putIfAbsent(Object key, Object value) {
        return entries.putIfAbsent(key, value) == null;
    }

    @Override
    public boolean remove(Object key) {
        return entries.remove(key) != null;
    }

    @Override
    public void removeAll() {
        entries.clear();
    }

    @Override
    public boolean containsKey(Object key) {
        return entries.containsKey(key);
    }

    /** Entry listeners are not supported: nothing in the benchmarks registers one. */
    @Override
    public Registration registerCacheEntryListener(EntryListener cacheEntryListener) {
        throw new UnsupportedOperationException("AllInMemoryCache does not notify entry listeners");
    }
}
