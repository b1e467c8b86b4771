package io.github.ringbus.examples.transactional;

import jakarta.persistence.EntityManager;
import jakarta.persistence.PersistenceContext;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.messaging.interceptors.ExceptionHandler;
import org.axonframework.modelling.command.Repository;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * An external command handler that is a transactional Spring component (the shape of the cart publisher of the book
 * <i>Understanding Eventsourcing</i>'s companion application): it records the publication in a table of its own
 * through JPA and publishes the cart; when publishing fails, its exception handler records the failure on the cart.
 */
@Component
public class CartPublisher {

    private final Repository<Cart> carts;
    @PersistenceContext
    private EntityManager entityManager;

    public CartPublisher(Repository<Cart> carts) {
        this.carts = carts;
    }

    @Transactional
    @CommandHandler
    public void handle(Cart.Publish command) {
        entityManager.persist(new PublishedCart(command.cartId()));
        entityManager.flush();
        carts.load(command.cartId()).execute(Cart::publish);
    }

    @ExceptionHandler(resultType = IllegalStateException.class)
    public void onFailure(Cart.Publish command) {
        carts.load(command.cartId()).execute(Cart::failPublication);
    }
}
