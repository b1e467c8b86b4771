package io.github.ringbus.examples.setbased;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** One row per claimed e-mail address; the address is the primary key. */
@Entity
@Table(name = "email_claim")
public class EmailClaim {

    @Id
    private String email;
    private String memberId;

    protected EmailClaim() {
    }

    EmailClaim(String email, String memberId) {
        this.email = email;
        this.memberId = memberId;
    }
}
