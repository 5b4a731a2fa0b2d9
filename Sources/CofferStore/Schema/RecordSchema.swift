import Coffer
import Foundation

/// A record type's table, declared on the type itself: which properties
/// are sealed, what they bind and how they are indexed, named by the
/// type's `CodingKeys`. Every other property is a clear field, and every
/// field's type comes from the property's Swift type, so the schema is
/// written once and the compiler checks its names (docs/store.md, "A
/// schema on the type").
///
/// ```swift
/// struct Note: SchemaRecord {
///     static let storeTable = "notes"
///     static let storeSchema = RecordSchema(
///         primaryKey: CodingKeys.id,
///         .sealed(CodingKeys.body, bind: [CodingKeys.title]),
///         .sealed(CodingKeys.tag, indexes: [.init(name: "tag_exact", transforms: [.trim, .lowercase], bits: 16)]))
///     var id: Int64?
///     var title: String
///     var body: String
///     var tag: String?
///     var createdAt: Date
/// }
/// let store = try RecordStore.open(orCreate: path, records: [Note.self], secret: .password(typed))
/// ```
public protocol SchemaRecord: SealedRecord {
    static var storeSchema: RecordSchema { get }
}

public struct RecordSchema: Sendable {
    /// What one property is beside being a clear field.
    public struct Rule: Sendable {
        let field: String
        let bind: [String]
        let indexes: [StoreSchema.Index]

        /// The property is sealed; `bind` names clear properties its cell is
        /// bound to; `indexes` are its blind indexes.
        public static func sealed(
            _ key: some CodingKey, bind: [any CodingKey] = [], indexes: [StoreSchema.Index] = []
        ) -> Rule {
            Rule(field: key.stringValue, bind: bind.map(\.stringValue), indexes: indexes)
        }
    }

    let primaryKey: String
    let tenant: String?
    let tenantKeys: TenantKeyPlace?
    let rules: [Rule]

    public init(primaryKey: some CodingKey, _ rules: Rule...) {
        self.primaryKey = primaryKey.stringValue
        tenant = nil
        tenantKeys = nil
        self.rules = rules
    }

    /// A table kept per tenant: `tenant` names the clear property holding
    /// each record's tenant, whose records are sealed and indexed under
    /// keys of its own (docs/store.md, "Tenants"); `keys` says where those
    /// are wrapped (``TenantKeyPlace``; under the store's ring by default).
    public init(
        primaryKey: some CodingKey, tenant: some CodingKey, keys: TenantKeyPlace? = nil, _ rules: Rule...
    ) {
        self.primaryKey = primaryKey.stringValue
        self.tenant = tenant.stringValue
        tenantKeys = keys
        self.rules = rules
    }
}

extension StoreSchema.Table {
    /// `R`'s table: its properties, in declaration order, as fields of the
    /// types their Swift types are stored as (``StoreValue/init(encoding:)``),
    /// with `R.storeSchema`'s sealing, binding and indexes.
    public init<R: SchemaRecord>(record type: R.Type) throws {
        let properties = try RecordProbe.properties(of: R.self)
        let schema = R.storeSchema
        var fields: [StoreSchema.Field] = properties.map { .init(name: $0.name, type: $0.type) }
        for rule in schema.rules {
            guard let index = fields.firstIndex(where: { $0.name == rule.field }) else {
                throw CofferError(
                    .invalidArgument, "\(R.self).storeSchema seals \(rule.field), which \(R.self) does not decode")
            }
            fields[index].sealed = true
            fields[index].bind = rule.bind
            fields[index].indexes = rule.indexes
        }
        guard fields.contains(where: { $0.name == schema.primaryKey }) else {
            throw CofferError(
                .invalidArgument, "\(R.self)'s primary key \(schema.primaryKey) is not a property it decodes")
        }
        self.init(
            name: R.storeTable, primaryKey: schema.primaryKey, fields: fields, tenant: schema.tenant,
            tenantKeys: schema.tenantKeys)
    }

    /// Refuses a table that does not keep `R` as `R` declares it, naming
    /// the first field that differs and how.
    public func check<R: SchemaRecord>(_ type: R.Type) throws {
        let declared = try StoreSchema.Table(record: R.self)
        func refuse(_ field: String, _ why: String) -> CofferError {
            CofferError(
                .invalidArgument,
                "\(R.self).\(field) does not match the store's \(name): \(why). Change the type, or migrate the store (StoreMigrator)"
            )
        }
        guard declared.primaryKey == primaryKey else {
            throw refuse(declared.primaryKey, "the store's primary key is \(primaryKey)")
        }
        guard declared.tenant == tenant else {
            throw refuse(
                declared.tenant ?? tenant ?? "",
                "its tenant is \(declared.tenant ?? "none") in the type, \(tenant ?? "none") in the store")
        }
        guard (declared.tenantKeys ?? .store) == (tenantKeys ?? .store) else {
            throw refuse(
                tenant ?? "",
                "its tenants' keys are held by the \((declared.tenantKeys ?? .store).rawValue) in the type, by the \((tenantKeys ?? .store).rawValue) in the store"
            )
        }
        for wanted in declared.fields {
            guard let stored = field(wanted.name) else { throw refuse(wanted.name, "the table has no such field") }
            guard stored.type == wanted.type else {
                throw refuse(
                    wanted.name,
                    "the property is stored as \(wanted.type.name), the field holds \(stored.type.name)")
            }
            guard stored.sealed == wanted.sealed else {
                throw refuse(
                    wanted.name,
                    wanted.sealed
                        ? "the type seals it, the store keeps it clear" : "the store seals it, the type does not")
            }
            guard stored.bind == wanted.bind else {
                throw refuse(wanted.name, "it binds \(wanted.bind) in the type, \(stored.bind) in the store")
            }
            let (mine, theirs) = (wanted.indexes.map(\.signature), stored.indexes.map(\.signature))
            guard mine == theirs else {
                throw refuse(wanted.name, "its indexes are \(mine) in the type, \(theirs) in the store")
            }
        }
    }
}

extension StoreSchema {
    /// A schema of the record types' tables (``SchemaRecord``), checked.
    public init(records: [any SchemaRecord.Type]) throws {
        try self.init(tables: try records.map { try Table(record: $0) })
    }

    /// Refuses a schema that does not keep every one of `records` as it
    /// declares itself (``Table/check(_:)``).
    public func check(_ records: [any SchemaRecord.Type]) throws {
        for record in records {
            func check<R: SchemaRecord>(_ type: R.Type) throws { try table(R.storeTable).check(R.self) }
            try check(record)
        }
    }
}

extension StoreSchema.Index {
    /// What must agree between a type's index and the store's: all but why it leaks.
    var signature: String {
        "\(name)(\(transforms.map(\.description).joined(separator: ",")); \(bits) bits"
            + (with.isEmpty ? "" : "; with \(with.joined(separator: ","))")
            + (tokens.map { "; tokens \($0.description)" } ?? "") + ")"
    }
}
