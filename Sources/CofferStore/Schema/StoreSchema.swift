import Coffer
import Foundation

/// The tables of a store and, per field, whether it is clear or sealed,
/// what a sealed field binds, and its blind indexes (docs/store.md).
///
/// ```swift
/// let schema = try StoreSchema(tables: [
///     .init(name: "presents", primaryKey: "id", fields: [
///         .init(name: "id", type: .integer),
///         .init(name: "to", type: .text),
///         .init(name: "description", type: .text, sealed: true, bind: ["to"]),
///         .init(name: "email", type: .text, sealed: true,
///               indexes: [.init(name: "email_exact", transforms: [.trim, .lowercase], bits: 16)]),
///     ]),
/// ])
/// ```
///
/// The CLI reads the same shape from JSON (`coffer store init --schema`).
public struct StoreSchema: Codable, Sendable {
    public var tables: [Table]

    public struct Table: Codable, Sendable {
        public var name: String
        public var primaryKey: String
        public var fields: [Field]
        /// The clear field naming each record's tenant, or nil for a table
        /// kept under the store's own keys. A tenant's records are sealed
        /// and indexed under keys of its own, made at its first write, and
        /// erased with ``RecordStore/shredTenant(_:tenant:keepRecords:)``
        /// (docs/store.md, "Tenants").
        public var tenant: String?
        /// Where the tenants' keys are wrapped: nil or ``TenantKeyPlace/store``
        /// under the store's ring alone; ``TenantKeyPlace/holder`` also under
        /// each tenant's key at a holder outside the database, so a shred
        /// reaches backups too. Fixed when the table is made.
        public var tenantKeys: TenantKeyPlace?
        public init(
            name: String, primaryKey: String, fields: [Field], tenant: String? = nil, tenantKeys: TenantKeyPlace? = nil
        ) {
            self.name = name
            self.primaryKey = primaryKey
            self.fields = fields
            self.tenant = tenant
            self.tenantKeys = tenantKeys
        }
        public func field(_ name: String) -> Field? { fields.first { $0.name == name } }
    }

    public struct Field: Codable, Sendable {
        public var name: String
        public var type: FieldType
        /// Sealed under the store's key ring; clear when false.
        public var sealed: Bool
        /// Clear fields of the same row whose values the sealed value's
        /// context binds: change one and the cell no longer opens.
        public var bind: [String]
        public var indexes: [Index]

        public init(name: String, type: FieldType, sealed: Bool = false, bind: [String] = [], indexes: [Index] = []) {
            self.name = name
            self.type = type
            self.sealed = sealed
            self.bind = bind
            self.indexes = indexes
        }

        enum CodingKeys: String, CodingKey { case name, type, sealed, bind, indexes }
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            type = try container.decode(FieldType.self, forKey: .type)
            sealed = try container.decodeIfPresent(Bool.self, forKey: .sealed) ?? false
            bind = try container.decodeIfPresent([String].self, forKey: .bind) ?? []
            indexes = try container.decodeIfPresent([Index].self, forKey: .indexes) ?? []
        }
    }

    /// A blind index: HMAC of the transformed value(s), truncated to `bits`.
    /// With `tokens`, a *token index*: the value is split into tokens (words,
    /// or parts between a separator), each transformed, and every distinct
    /// token gets an entry in the index's side table, so a record is found
    /// by any one of them.
    public struct Index: Codable, Sendable {
        public var name: String
        public var transforms: [IndexTransform]
        public var bits: Int
        /// More fields of the row for a compound index (after the field the index is declared on).
        public var with: [String]
        /// How a token index splits the value; nil for an index of the whole value.
        public var tokens: IndexTokens?
        /// Why this index may leak more than the store allows by default:
        /// required, in writing, for an index of more than
        /// ``StoreSchema/quietIndexBits`` bits and for every index of a
        /// field after its first (docs/store.md, "What blind indexes leak").
        public var acceptLeakage: String?

        public init(
            name: String, transforms: [IndexTransform] = [], bits: Int, with: [String] = [],
            tokens: IndexTokens? = nil, acceptLeakage: String? = nil
        ) {
            self.name = name
            self.transforms = transforms
            self.bits = bits
            self.with = with
            self.tokens = tokens
            self.acceptLeakage = acceptLeakage
        }

        enum CodingKeys: String, CodingKey { case name, transforms, bits, with, tokens, acceptLeakage }
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            transforms = try (container.decodeIfPresent([String].self, forKey: .transforms) ?? []).map {
                try IndexTransform(parsing: $0)
            }
            bits = try container.decode(Int.self, forKey: .bits)
            with = try container.decodeIfPresent([String].self, forKey: .with) ?? []
            tokens = try container.decodeIfPresent(String.self, forKey: .tokens).map { try IndexTokens(parsing: $0) }
            acceptLeakage = try container.decodeIfPresent(String.self, forKey: .acceptLeakage)
        }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(transforms.map(\.description), forKey: .transforms)
            try container.encode(bits, forKey: .bits)
            if !with.isEmpty { try container.encode(with, forKey: .with) }
            if let tokens { try container.encode(tokens.description, forKey: .tokens) }
            if let acceptLeakage { try container.encode(acceptLeakage, forKey: .acceptLeakage) }
        }
    }

    /// Bits a blind index may keep: few enough that values collide (the
    /// point of a blind index), enough to find candidates quickly.
    public static let indexBits = 1...64

    /// The widest index the store takes without a written `acceptLeakage`:
    /// past 32 bits, buckets of any real table hold one value each, and the
    /// index is an equality oracle on the field.
    public static let quietIndexBits = 32

    /// A schema, checked (``validate()``).
    public init(tables: [Table]) throws {
        self.tables = tables
        try validate()
    }

    /// Reads and checks a schema file's JSON.
    public init(json: some DataProtocol) throws {
        try SchemaJSONError.checkMembers(Data(json))
        do { self = try JSONDecoder().decode(StoreSchema.self, from: Data(json)) } catch let error as CofferError {
            throw error
        } catch {
            throw CofferError(
                .malformed,
                "the schema is not the documented JSON shape (docs/store.md): \(SchemaJSONError.explain(error))")
        }
        try validate()
    }

    public func table(_ name: String) throws -> Table {
        guard let table = tables.first(where: { $0.name == name }) else {
            throw CofferError(.invalidArgument, "the store has no table \"\(name)\"")
        }
        return table
    }

    /// Names are plain identifiers (letters, digits, `_`, not starting
    /// with a digit or `coffer_`, at most 63), unique where they must be;
    /// the primary key and bound fields are clear fields of the table;
    /// indexes sit on sealed fields, have 1 to 64 bits, and their names
    /// differ from every field's; an index wider than 32 bits, or a second
    /// index on one field, says why in `acceptLeakage`.
    public func validate() throws {
        func bad(_ text: String) -> CofferError { CofferError(.invalidArgument, "schema: \(text)") }
        guard !tables.isEmpty else { throw bad("no tables") }
        var tableNames = Set<String>()
        for table in tables {
            try Self.checkName(table.name, what: "table")
            guard tableNames.insert(table.name).inserted else { throw bad("two tables are called \(table.name)") }
            var columns = Set<String>()
            for field in table.fields {
                try Self.checkName(field.name, what: "field")
                guard columns.insert(field.name).inserted else {
                    throw bad("\(table.name) has two fields called \(field.name)")
                }
            }
            guard let key = table.field(table.primaryKey), !key.sealed else {
                throw bad("\(table.name)'s primary key \(table.primaryKey) must be one of its clear fields")
            }
            if table.tenantKeys != nil && table.tenant == nil {
                throw bad("\(table.name) names where its tenants' keys are kept, but has no tenant field")
            }
            if let tenant = table.tenant {
                guard let field = table.field(tenant), !field.sealed, tenant != table.primaryKey,
                    [.text, .integer].contains(field.type)
                else {
                    throw bad(
                        "\(table.name)'s tenant \(tenant) must be one of its clear text or integer fields, other than its primary key"
                    )
                }
            }
            for field in table.fields {
                for name in field.bind {
                    guard field.sealed else { throw bad("\(table.name).\(field.name) binds fields but is not sealed") }
                    guard let bound = table.field(name), !bound.sealed, name != field.name else {
                        throw bad("\(table.name).\(field.name) binds \(name), which is not a clear field of the table")
                    }
                }
                for (position, index) in field.indexes.enumerated() {
                    try Self.checkName(index.name, what: "index")
                    guard field.sealed else {
                        throw bad("\(table.name).\(field.name) is clear: search it directly, it needs no blind index")
                    }
                    guard Self.indexBits.contains(index.bits) else {
                        throw bad("index \(index.name) keeps \(index.bits) bits; 1 to 64 are allowed")
                    }
                    let acknowledged = !(index.acceptLeakage ?? "").trimmingCharacters(in: .whitespaces).isEmpty
                    if index.bits > Self.quietIndexBits && !acknowledged {
                        throw bad(
                            "index \(index.name) keeps \(index.bits) bits, more than \(Self.quietIndexBits): it would show which rows share a value; use fewer bits (coffer store plan), or say why in \"acceptLeakage\": \"reason\""
                        )
                    }
                    if position > 0 && !acknowledged {
                        throw bad(
                            "index \(index.name) is a second index on \(table.name).\(field.name): indexes of one field leak together more than each alone; drop it, or say why in \"acceptLeakage\": \"reason\""
                        )
                    }
                    guard columns.insert(index.name).inserted else {
                        throw bad("index \(index.name) has the name of another field or index of \(table.name)")
                    }
                    if index.tokens != nil && !index.with.isEmpty {
                        throw bad("index \(index.name) splits into tokens and cannot also combine fields")
                    }
                    for other in index.with where table.field(other) == nil || other == field.name {
                        throw bad("index \(index.name) combines \(other), which is not another field of \(table.name)")
                    }
                }
            }
        }
    }

    package static func checkName(_ name: String, what: String) throws {
        let scalars = Array(name.unicodeScalars)
        let valid =
            (1...63).contains(scalars.count) && !name.hasPrefix("coffer_")
            && scalars.allSatisfy {
                $0.isASCII && ($0 == "_" || $0.properties.isAlphabetic || ("0"..."9").contains($0))
            }
            && !("0"..."9").contains(scalars[0])
        guard valid else {
            throw CofferError(
                .invalidArgument,
                "schema: the \(what) name \"\(name)\" is not a plain identifier (ASCII letters, digits and _, not starting with a digit or coffer_, at most 63)"
            )
        }
    }
}
