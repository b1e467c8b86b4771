package io.github.ringbus.postgres;

import io.github.ringbus.fixtures.AccountEvents.Deposited;
import org.axonframework.messaging.MetaData;
import org.axonframework.serialization.Converter;
import org.axonframework.serialization.SerializationException;
import org.axonframework.serialization.SerializedObject;
import org.axonframework.serialization.SerializedType;
import org.axonframework.serialization.Serializer;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * Jackson, recording which threads serialize event payloads and metadata, and refusing the payloads the given
 * predicate picks; it cannot read back the types {@code unreadable} picks (by serialized type name).
 */
final class RecordingSerializer implements Serializer {

    private final Serializer delegate = PostgresServer.SERIALIZER;
    private final Predicate<Object> refuse;
    private final Predicate<String> unreadable;
    private final Predicate<Object> unreadableValue;
    final Set<String> eventThreads = ConcurrentHashMap.newKeySet();

    RecordingSerializer(Predicate<Object> refuse) {
        this(refuse, type -> false);
    }

    RecordingSerializer(Predicate<Object> refuse, Predicate<String> unreadable) {
        this(refuse, unreadable, value -> false);
    }

    /** @param unreadableValue the values it reads and then refuses, as a creator that checks its fields would */
    RecordingSerializer(Predicate<Object> refuse, Predicate<String> unreadable, Predicate<Object> unreadableValue) {
        this.refuse = refuse;
        this.unreadable = unreadable;
        this.unreadableValue = unreadableValue;
    }

    @Override
    public <T> SerializedObject<T> serialize(Object object, Class<T> expectedRepresentation) {
        if (object instanceof Deposited || object instanceof MetaData) {
            eventThreads.add(Thread.currentThread().getName());
        }
        if (refuse.test(object)) {
            throw new SerializationException("Refusing to serialize " + object + ": amount 13");
        }
        return delegate.serialize(object, expectedRepresentation);
    }

    @Override
    public <T> boolean canSerializeTo(Class<T> expectedRepresentation) {
        return delegate.canSerializeTo(expectedRepresentation);
    }

    @Override
    public <S, T> T deserialize(SerializedObject<S> serializedObject) {
        if (unreadable.test(serializedObject.getType().getName())) {
            throw new SerializationException("This serializer cannot read back ["
                                                     + serializedObject.getType().getName() + "]");
        }
        T read = delegate.deserialize(serializedObject);
        if (unreadableValue.test(read)) {
            throw new SerializationException("This serializer cannot read back the value " + read);
        }
        return read;
    }

    @Override
    @SuppressWarnings("rawtypes")
    public Class classForType(SerializedType type) {
        return delegate.classForType(type);
    }

    @Override
    public SerializedType typeForClass(Class type) {
        return delegate.typeForClass(type);
    }

    @Override
    public Converter getConverter() {
        return delegate.getConverter();
    }
}
