package io.github.ringbus.examples.setbased;

import jakarta.persistence.EntityManager;
import jakarta.persistence.PersistenceContext;
import org.axonframework.config.ProcessingGroup;
import org.axonframework.eventhandling.EventHandler;
import org.springframework.stereotype.Component;

/**
 * The subscribing handler that keeps the look-up table of claimed addresses through JPA, in the transaction of the
 * command's events; a taken address makes it throw (the table's primary key refuses the row).
 */
@Component
@ProcessingGroup("email-claims")
public class EmailClaims {

    @PersistenceContext
    private EntityManager entityManager;

    @EventHandler
    void on(Member.Registered event) {
        entityManager.persist(new EmailClaim(event.email(), event.memberId()));
        entityManager.flush(); // a taken address fails here, inside the handler
    }
}
