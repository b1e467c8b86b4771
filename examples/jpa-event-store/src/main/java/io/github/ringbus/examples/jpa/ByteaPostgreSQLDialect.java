package io.github.ringbus.examples.jpa;

import org.hibernate.boot.model.TypeContributions;
import org.hibernate.dialect.PostgreSQLDialect;
import org.hibernate.service.ServiceRegistry;
import org.hibernate.type.SqlTypes;
import org.hibernate.type.descriptor.jdbc.BinaryJdbcType;
import org.hibernate.type.descriptor.jdbc.spi.JdbcTypeRegistry;

/**
 * PostgreSQL with {@code @Lob byte[]} stored as {@code bytea}. Axon's JPA entries ({@code DomainEventEntry},
 * {@code SnapshotEventEntry}, {@code TokenEntry}, sagas) declare their payload and metadata {@code @Lob}, which
 * Hibernate maps on PostgreSQL to {@code oid}: a large object per value, written with several round trips of its own
 * (create, open, write, close). For an event store that turns every event into about eight round trips, whatever the
 * command bus. As {@code bytea} the value travels inside the row's {@code INSERT}.
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
