package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.common.ReflectionUtils;
import org.axonframework.common.annotation.AnnotationUtils;
import org.axonframework.modelling.command.AnnotationCommandTargetResolver;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateVersion;
import org.axonframework.modelling.command.VersionedAggregateIdentifier;

import java.lang.annotation.Annotation;
import java.lang.reflect.AccessibleObject;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

import static java.lang.String.format;

/**
 * Finds a command's target aggregate by {@link TargetAggregateIdentifier} and {@link TargetAggregateVersion}, with
 * exactly the rules and messages of Axon's {@link AnnotationCommandTargetResolver} (annotated methods first, then
 * fields, meta-annotations honoured), but looks for the annotated members once per payload class instead of on
 * every command.
 * <p>
 * Axon's resolver walks every method and field of the payload class, and their meta-annotations, for each command:
 * measured here, that was the largest cost of both the preload and the handle stage, and it costs Axon's own buses
 * as much (docs/benchmarks.md). ringbus uses it by default; any Axon command bus can use it too, registered as the
 * configuration's {@code CommandTargetResolver} component.
 * <p>
 * Guarantees: the target (identifier and version) Axon's resolver finds, and the same exceptions for a missing or
 * unreadable one. Thread-safe, from any number of threads; the per-class lookup is a {@link ClassValue}, so a class
 * is inspected once.
 * <p>
 * Tests: {@code behaviour.BadInputTest}.
 */
public final class AnnotatedTargetResolver implements CommandTargetResolver {

    /** Creates a resolver; every instance inspects each payload class once. */
    public AnnotatedTargetResolver() {
    }

    private final ClassValue<Accessors> accessors = new ClassValue<>() {
        @Override
        protected Accessors computeValue(Class<?> payloadType) {
            return new Accessors(find(payloadType, TargetAggregateIdentifier.class),
                                 find(payloadType, TargetAggregateVersion.class));
        }
    };

    @Override
    public VersionedAggregateIdentifier resolveTarget(CommandMessage<?> command) {
        Accessors target = accessors.get(command.getPayloadType());
        Object payload = command.getPayload();
        Object identifier;
        Long version;
        try {
            identifier = read(target.identifier, payload);
            version = asLong(read(target.version, payload));
        } catch (InvocationTargetException e) {
            throw new IllegalArgumentException("An exception occurred while extracting aggregate "
                                                       + "information form a command", e);
        } catch (IllegalAccessException e) {
            throw new IllegalArgumentException("The current security context does not allow extraction of "
                                                       + "aggregate information from the given command.", e);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("The value provided for the version is not a number.", e);
        }
        if (identifier == null) {
            throw new IllegalArgumentException(format(
                    "Invalid command. It does not identify the target aggregate. "
                            + "Make sure at least one of the fields or methods in the [%s] class contains the "
                            + "@TargetAggregateIdentifier annotation and that it returns a non-null value.",
                    command.getPayloadType().getSimpleName()
            ));
        }
        return new VersionedAggregateIdentifier(identifier, version);
    }

    /**
     * The identifier the command's payload names, without an exception where it names none: for commands no
     * aggregate handles, most of which name none ({@code NamedTargets}).
     *
     * @return the identifier as a string, or null when the payload type has no {@link TargetAggregateIdentifier}
     *         member, it holds null, or it cannot be read
     */
    String identifierOrNull(CommandMessage<?> command) {
        if (command.getPayloadType() == null) {
            return null;
        }
        AccessibleObject member = accessors.get(command.getPayloadType()).identifier;
        if (member == null) {
            return null;
        }
        try {
            Object identifier = read(member, command.getPayload());
            return identifier == null ? null : identifier.toString();
        } catch (InvocationTargetException | IllegalAccessException | RuntimeException unreadable) {
            return null;
        }
    }

    private static AccessibleObject find(Class<?> type, Class<? extends Annotation> annotation) {
        for (Method method : ReflectionUtils.methodsOf(type)) {
            if (AnnotationUtils.isAnnotationPresent(method, annotation)) {
                return ReflectionUtils.ensureAccessible(method);
            }
        }
        for (Field field : ReflectionUtils.fieldsOf(type)) {
            if (AnnotationUtils.isAnnotationPresent(field, annotation)) {
                return ReflectionUtils.ensureAccessible(field);
            }
        }
        return null;
    }

    private static Object read(AccessibleObject member, Object payload)
            throws InvocationTargetException, IllegalAccessException {
        if (member == null) {
            return null;
        }
        if (member instanceof Method) {
            return ((Method) member).invoke(payload);
        }
        return ((Field) member).get(payload);
    }

    private static Long asLong(Object value) {
        if (value == null) {
            return null;
        }
        if (value instanceof Number) {
            return ((Number) value).longValue();
        }
        return Long.parseLong(value.toString());
    }

    private static final class Accessors {

        final AccessibleObject identifier;
        final AccessibleObject version;

        Accessors(AccessibleObject identifier, AccessibleObject version) {
            this.identifier = identifier;
            this.version = version;
        }
    }
}
