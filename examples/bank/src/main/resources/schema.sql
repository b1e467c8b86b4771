-- Axon's JDBC event store and token store tables, as Axon's PostgresEventTableFactory and PostgresTokenTableFactory
-- create them, and the read model of BalanceProjection. Run at start-up (spring.sql.init.mode=always).
CREATE TABLE IF NOT EXISTS DomainEventEntry (
    globalIndex BIGSERIAL NOT NULL,
    aggregateIdentifier VARCHAR(255) NOT NULL,
    sequenceNumber BIGINT NOT NULL,
    type VARCHAR(255),
    eventIdentifier VARCHAR(255) NOT NULL,
    metaData bytea,
    payload bytea NOT NULL,
    payloadRevision VARCHAR(255),
    payloadType VARCHAR(255) NOT NULL,
    timeStamp VARCHAR(255) NOT NULL,
    PRIMARY KEY (globalIndex),
    UNIQUE (aggregateIdentifier, sequenceNumber),
    UNIQUE (eventIdentifier)
);

CREATE TABLE IF NOT EXISTS SnapshotEventEntry (
    aggregateIdentifier VARCHAR(255) NOT NULL,
    sequenceNumber BIGINT NOT NULL,
    type VARCHAR(255) NOT NULL,
    eventIdentifier VARCHAR(255) NOT NULL,
    metaData bytea,
    payload bytea NOT NULL,
    payloadRevision VARCHAR(255),
    payloadType VARCHAR(255) NOT NULL,
    timeStamp VARCHAR(255) NOT NULL,
    PRIMARY KEY (aggregateIdentifier, sequenceNumber),
    UNIQUE (eventIdentifier)
);

CREATE TABLE IF NOT EXISTS TokenEntry (
    processorName VARCHAR(255) NOT NULL,
    segment INTEGER NOT NULL,
    token bytea NULL,
    tokenType VARCHAR(255) NULL,
    timestamp VARCHAR(255) NULL,
    owner VARCHAR(255) NULL,
    PRIMARY KEY (processorName, segment)
);

CREATE TABLE IF NOT EXISTS account_balance (
    account_id VARCHAR(255) NOT NULL PRIMARY KEY,
    owner VARCHAR(255) NOT NULL,
    balance BIGINT NOT NULL
);
