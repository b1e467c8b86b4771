package io.github.ringbus.examples.transactional;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** One row per published cart, written by the publishing handler in its transaction. */
@Entity
@Table(name = "published_cart")
public class PublishedCart {

    @Id
    private String cartId;

    protected PublishedCart() {
    }

    PublishedCart(String cartId) {
        this.cartId = cartId;
    }
}
