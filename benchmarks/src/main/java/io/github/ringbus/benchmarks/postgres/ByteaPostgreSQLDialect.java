package io.github.ringbus.benchmarks.postgres;

import org.hibernate.boot.model.TypeContributions;
import org.hibernate.dialect.PostgreSQLDialect;
import org.hibernate.service.ServiceRegistry;
import org.hibernate.type.SqlTypes;
import org.hibernate.type.descriptor.jdbc.BinaryJdbcType;
import org.hibernate.type.descriptor.jdbc.spi.JdbcTypeRegistry;

/**
 * PostgreSQL with {@code @Lob byte[]} stored as {@code bytea}, in the row: the dialect docs/postgres.md recommends for
 * Axon's JPA entries (the one {@code examples/jpa-event-store} configures; the benchmarks do not depend on the
 * example). Hibernate's own {@code PostgreSQLDialect} maps {@code @Lob} to {@code oid}, a large object per value.
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
