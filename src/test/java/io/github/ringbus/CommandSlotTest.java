package io.github.ringbus;

import io.github.ringbus.fixtures.AccountEvents.Deposited;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.eventhandling.GenericEventMessage;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.axonframework.monitoring.MessageMonitor;
import org.axonframework.monitoring.NoOpMessageMonitorCallback;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * A slot filled with a command carries nothing of what an earlier command left in it, whichever field that was and
 * whoever wrote it: every field is found by reflection, so a field added later is covered too.
 */
class CommandSlotTest {

    private final RingEventStore store = RingEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();

    @Test
    void fillingASlotResetsEveryFieldAnEarlierCommandLeftInIt() throws Exception {
        CommandSlot slot = new CommandSlot(store);
        List<String> dirtied = dirtyEveryField(slot);
        slot.events.add(GenericEventMessage.asEventMessage(new Deposited("a", 1)));
        slot.unitOfWork.startFor(asCommandMessage("left over"));
        slot.unitOfWork.prepareCommit();
        slot.unitOfWork.pause();
        assertThat(slot.claimCompletion()).as("completion claimed by the earlier command").isFalse();

        CommandMessage<?> next = asCommandMessage("next");
        CommandCallback<Object, Object> callback = (command, result) -> {
        };
        MessageMonitor.MonitorCallback monitorCallback = NoOpMessageMonitorCallback.INSTANCE;
        AggregateHolder<?> borrowed = new AggregateHolder<>(null, "another aggregate");
        slot.ledger.borrow(borrowed, 3);
        slot.ledger.runInPlaceOn(borrowed);
        slot.ledger.ranOn(7);
        slot.ledger.forgetRun(); // run again once
        slot.ledger.ranOn(8);
        slot.fill(42, next, callback, monitorCallback);

        for (Field field : stateFields()) {
            Object value = field.get(slot);
            switch (field.getName()) {
                case "command" -> assertThat(value).isSameAs(next);
                case "callback" -> assertThat(value).isSameAs(callback);
                case "monitorCallback" -> assertThat(value).isSameAs(monitorCallback);
                case "sequence" -> assertThat(value).isEqualTo(42L);
                default -> assertThat(value).as("field %s after fill", field.getName())
                                            .isEqualTo(defaultOf(field.getType()));
            }
        }
        assertThat(dirtied).as("fields checked").hasSizeGreaterThan(15);
        assertThat(slot.events).as("events after fill").isEmpty();
        assertThat(slot.ledger.hasBorrowed(borrowed)).as("an aggregate borrowed by the earlier command").isFalse();
        assertThat(slot.ledger.inPlaceTarget()).as("an aggregate of a command run in place").isNull();
        assertThat(slot.ledger.ranOnAggregateState()).as("the earlier command's run on its aggregate").isFalse();
        assertThat(slot.ledger.isReRun()).as("the earlier command's runs again").isFalse();
        assertThat(slot.unitOfWork.phase()).as("Unit of Work after fill").isEqualTo(UnitOfWork.Phase.NOT_STARTED);
        assertThat(slot.claimCompletion()).as("completion of the new command can be claimed").isTrue();
    }

    /** Sets every plain field of the slot to a value other than its default; returns the fields' names. */
    private static List<String> dirtyEveryField(CommandSlot slot) throws Exception {
        List<String> names = new ArrayList<>();
        for (Field field : stateFields()) {
            Class<?> type = field.getType();
            Object dirty;
            if (type == boolean.class) {
                dirty = true;
            } else if (type == int.class) {
                dirty = 7;
            } else if (type == long.class) {
                dirty = 7L;
            } else if (type == Long.class) {
                dirty = 7L;
            } else if (Throwable.class.isAssignableFrom(type)) {
                dirty = new IllegalStateException("left over");
            } else {
                dirty = dirtyReference(type);
            }
            if (dirty != null) {
                field.set(slot, dirty);
                names.add(field.getName());
            }
        }
        return names;
    }

    /** A non-null value of a reference type, where one can be made without the pipeline; null where not. */
    private static Object dirtyReference(Class<?> type) {
        if (type == CommandMessage.class) {
            return asCommandMessage("left over");
        }
        if (type == CommandCallback.class) {
            return (CommandCallback<Object, Object>) (command, result) -> {
            };
        }
        if (type == MessageMonitor.MonitorCallback.class) {
            return NoOpMessageMonitorCallback.INSTANCE;
        }
        if (type == org.axonframework.messaging.MessageHandler.class) {
            return (org.axonframework.messaging.MessageHandler<CommandMessage<?>>) command -> null;
        }
        if (type == org.axonframework.commandhandling.CommandResultMessage.class) {
            return org.axonframework.commandhandling.GenericCommandResultMessage.asCommandResultMessage("left over");
        }
        return null; // the repository and the aggregate holder need a pipeline; they are reset like the rest
    }

    /** The slot's fields that hold a command's state: every non-static, non-final field. */
    private static List<Field> stateFields() {
        List<Field> fields = new ArrayList<>();
        for (Field field : CommandSlot.class.getDeclaredFields()) {
            int modifiers = field.getModifiers();
            if (Modifier.isStatic(modifiers) || Modifier.isFinal(modifiers)) {
                continue;
            }
            field.setAccessible(true);
            fields.add(field);
        }
        return fields;
    }

    private static Object defaultOf(Class<?> type) {
        if (type == boolean.class) {
            return false;
        }
        if (type == int.class) {
            return 0;
        }
        if (type == long.class) {
            return 0L;
        }
        return null;
    }
}
