package io.github.ringbus.jpa;

import org.hibernate.boot.model.TypeContributions;
import org.hibernate.dialect.PostgreSQLDialect;
import org.hibernate.service.ServiceRegistry;
import org.hibernate.type.SqlTypes;
import org.hibernate.type.descriptor.jdbc.BinaryJdbcType;
import org.hibernate.type.descriptor.jdbc.spi.JdbcTypeRegistry;

/**
 * PostgreSQL with {@code @Lob byte[]} stored as {@code bytea}, in the row. Axon's JPA entries ({@code DomainEventEntry},
 * {@code SnapshotEventEntry}, {@code TokenEntry}, sagas) declare their payload and metadata {@code @Lob}, which
 * Hibernate maps on PostgreSQL to {@code oid}: a large object per value, written with several round trips of its own
 * (create, open, write, close) by Axon's own engine, and kept by the server until removed. As {@code bytea} the value
 * travels inside the row. Spring Boot: {@code spring.jpa.database-platform=io.github.ringbus.jpa.ByteaPostgreSQLDialect}
 * for a new database (an existing one's {@code oid} columns need a migration; {@link PostgresJpaEventStorageEngine}
 * writes both). Everything else is Hibernate's {@link PostgreSQLDialect}. Stateless; Hibernate makes one per
 * session factory.
 */
public class ByteaPostgreSQLDialect extends PostgreSQLDialect {

    @Override
    protected String columnType(int sqlTypeCode) {
        return sqlTypeCode == SqlTypes.BLOB ? "bytea" : super.columnType(sqlTypeCode);
    }

    @Override
    protected String castType(int sqlTypeCode) {
        return sqlTypeCode == SqlTypes.BLOB ? "bytea" : super.castType(sqlTypeCode);
    }

    @Override
    public void contributeTypes(TypeContributions typeContributions, ServiceRegistry serviceRegistry) {
        super.contributeTypes(typeContributions, serviceRegistry);
        JdbcTypeRegistry registry = typeContributions.getTypeConfiguration().getJdbcTypeRegistry();
        registry.addDescriptor(SqlTypes.BLOB, BinaryJdbcType.INSTANCE);
    }
}
