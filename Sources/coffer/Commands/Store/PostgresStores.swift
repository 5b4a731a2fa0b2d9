import Coffer
import CofferStore

#if Server
import CofferStorePostgres
#endif

/// PostgreSQL stores, which this `coffer` has only when built with the
/// Server trait (they link SwiftNIO and postgres-nio); without it a
/// `postgres://` database is refused before anything else is done.
enum PostgresStores {
    static var missing: CofferError {
        CofferError(
            .unsupported,
            "this coffer was built without PostgreSQL stores: build it with swift build --traits Server (docs/packages.md)"
        )
    }

    #if Server
    static let available = true

    static func open(_ url: String, password: String?, secret: UnlockSecret) throws -> RecordStore {
        try RecordStore.open(postgres: url, password: password, secret: secret)
    }

    static func create(_ url: String, password: String?, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF)
        throws -> RecordStore
    {
        try RecordStore.create(postgres: url, password: password, schema: schema, secret: secret, kdf: kdf)
    }

    static func adopt(_ url: String, password: String?, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF)
        throws -> RecordStore
    {
        try RecordStore.adopt(postgres: url, password: password, schema: schema, secret: secret, kdf: kdf)
    }

    static func acceptCurrentState(_ url: String, password: String?, secret: UnlockSecret) throws -> UInt64 {
        try RecordStore.acceptCurrentState(postgres: url, password: password, secret: secret)
    }
    #else
    static let available = false

    static func open(_ url: String, password: String?, secret: UnlockSecret) throws -> RecordStore { throw missing }

    static func create(_ url: String, password: String?, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF)
        throws -> RecordStore
    { throw missing }

    static func adopt(_ url: String, password: String?, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF)
        throws -> RecordStore
    { throw missing }

    static func acceptCurrentState(_ url: String, password: String?, secret: UnlockSecret) throws -> UInt64 {
        throw missing
    }
    #endif
}
