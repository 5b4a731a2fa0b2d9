import Coffer
import Foundation

/// The changes an app makes to its store's schema as it grows, applied at
/// launch in the order registered, each once: GRDB's `DatabaseMigrator`
/// for a CofferStore.
///
/// ```swift
/// var migrator = StoreMigrator()
/// migrator.registerMigration("presents have a note") { change in
///     try change.addField(.init(name: "note", type: .text, sealed: true, bind: ["toWhom"]), to: "presents")
/// }
/// migrator.registerMigration("shops") { change in
///     try change.addTable(.init(name: "shops", primaryKey: "id",
///                               fields: [.init(name: "id", type: .integer), .init(name: "name", type: .text)]))
///     try change.addField(.init(name: "shop", type: .text), to: "presents")
/// }
/// try await migrator.migrate(store)
/// ```
///
/// Each migration is one transaction, with the store's state: the schema
/// it makes and its name are written to the authenticated state (so a
/// database writer can neither add a migration's effect nor remove its
/// record), a migration killed halfway leaves nothing and runs again at
/// the next launch, and one that ran never runs twice. Rows already
/// stored get, in the same transaction, a sealed null for a new sealed
/// field and their entries in a new index. Migrations add; they never
/// remove or retype a field (make a new one, copy, and stop using the old).
public struct StoreMigrator: Sendable {
    public typealias Migration = @Sendable (inout StoreSchemaChange) throws -> Void

    private var migrations: [(name: String, body: Migration)] = []

    public init() {}

    /// Adds a migration after those registered; a name registered twice is `invalidArgument` at `migrate`.
    public mutating func registerMigration(_ name: String, _ body: @escaping Migration) {
        migrations.append((name, body))
    }

    /// The names of the migrations `store` has applied, in order.
    public func appliedMigrations(_ store: RecordStore) throws -> [String] {
        try store.read { work in
            let state = work.state
            return state.migrations
        }
    }

    /// Applies, in order, each registered migration `store` has not, and
    /// returns their names. A migration that throws, or a change the schema
    /// refuses, leaves the store as the migrations before it left it.
    @discardableResult
    public func migrate(_ store: RecordStore) throws -> [String] {
        let names = migrations.map(\.name)
        guard Set(names).count == names.count else {
            throw CofferError(.invalidArgument, "two migrations have the same name")
        }
        let done = Set(try appliedMigrations(store))
        var applied: [String] = []
        for migration in migrations where !done.contains(migration.name) {
            let ran = try store.changeWritingRows { db, state, changes -> Bool in
                guard !state.migrations.contains(migration.name) else { return false }
                guard state.job == nil else {
                    throw CofferError(
                        .refused, "a \(state.job!.kind) job is under way; finish it before migrating the schema")
                }
                var change = StoreSchemaChange(schema: state.schema)
                do { try migration.body(&change) } catch let error as CofferError {
                    throw error.prefixed("migration \"\(migration.name)\"")
                }
                try state.apply(change, db, changes: changes)
                state.migrations.append(migration.name)
                return true
            }
            if ran { applied.append(migration.name) }
        }
        return applied
    }

    /// ``migrate(_:)`` on a Dispatch thread, off the caller's.
    @discardableResult
    public func migrate(_ store: RecordStore) async throws -> [String] {
        try await BlockingWork.run { try self.migrate(store) }
    }
}

/// What one migration adds to the schema (``StoreMigrator``); each
/// addition is checked against the schema's rules as it is made.
public struct StoreSchemaChange: Sendable {
    /// The schema with the additions so far.
    public private(set) var schema: StoreSchema
    var steps: [Step] = []

    enum Step: Sendable {
        case table(String)
        case field(table: String, field: String)
        case index(table: String, field: String, index: String)
    }

    /// A change to `schema`, adding nothing yet (``StoreMigrator`` makes
    /// one per migration; make one to see what ``add(missingFrom:)`` would add).
    public init(schema: StoreSchema) { self.schema = schema }

    /// A new table, empty.
    public mutating func addTable(_ table: StoreSchema.Table) throws {
        guard !schema.tables.contains(where: { $0.name == table.name }) else {
            throw CofferError(.invalidArgument, "the store has a table \(table.name) already")
        }
        var next = schema
        next.tables.append(table)
        try next.validate()
        schema = next
        steps.append(.table(table.name))
    }

    /// A new field of `table`: null in every stored record (sealed null for
    /// a sealed field, with its indexes' entries).
    public mutating func addField(_ field: StoreSchema.Field, to table: String) throws {
        var next = schema
        let t = try Self.position(of: table, in: next)
        guard next.tables[t].field(field.name) == nil else {
            throw CofferError(.invalidArgument, "\(table) has a field \(field.name) already")
        }
        next.tables[t].fields.append(field)
        try next.validate()
        schema = next
        steps.append(.field(table: table, field: field.name))
    }

    /// A new blind index on the sealed `field` of `table`, filled for every stored record.
    public mutating func addIndex(_ index: StoreSchema.Index, on field: String, of table: String) throws {
        var next = schema
        let t = try Self.position(of: table, in: next)
        guard let f = next.tables[t].fields.firstIndex(where: { $0.name == field }) else {
            throw CofferError(.invalidArgument, "\(table) has no field \(field)")
        }
        next.tables[t].fields[f].indexes.append(index)
        try next.validate()
        schema = next
        steps.append(.index(table: table, field: field, index: index.name))
    }

    static func position(of table: String, in schema: StoreSchema) throws -> Int {
        guard let t = schema.tables.firstIndex(where: { $0.name == table }) else {
            throw CofferError(.invalidArgument, "the store has no table \"\(table)\"")
        }
        return t
    }
}

extension StoreSchemaChange {
    /// Adds what `target` has and the schema lacks: its new tables, the new
    /// fields of tables that exist (with their indexes), and new indexes on
    /// fields that exist. Anything the schema has that `target` changes or
    /// leaves out is `invalidArgument`, naming it: migrations only add.
    public mutating func add(missingFrom target: StoreSchema) throws {
        func same(_ a: some Encodable, _ b: some Encodable) throws -> Bool {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return try encoder.encode(a) == encoder.encode(b)
        }
        func refuse(_ what: String) -> CofferError {
            CofferError(.invalidArgument, "the new schema \(what): a migration only adds tables, fields and indexes")
        }
        for table in schema.tables {
            guard let next = target.tables.first(where: { $0.name == table.name }) else {
                throw refuse("has no table \(table.name)")
            }
            guard next.primaryKey == table.primaryKey else { throw refuse("changes the primary key of \(table.name)") }
            for field in table.fields {
                guard let wanted = next.field(field.name) else {
                    throw refuse("has no field \(table.name).\(field.name)")
                }
                guard wanted.type == field.type, wanted.sealed == field.sealed, wanted.bind == field.bind else {
                    throw refuse("changes \(table.name).\(field.name)")
                }
                for index in field.indexes {
                    guard let kept = wanted.indexes.first(where: { $0.name == index.name }), try same(kept, index)
                    else {
                        throw refuse("changes or drops the index \(index.name) of \(table.name).\(field.name)")
                    }
                }
            }
        }
        for next in target.tables {
            guard let table = schema.tables.first(where: { $0.name == next.name }) else {
                try addTable(next)
                continue
            }
            for wanted in next.fields {
                guard let field = table.field(wanted.name) else {
                    try addField(wanted, to: next.name)
                    continue
                }
                for index in wanted.indexes where !field.indexes.contains(where: { $0.name == index.name }) {
                    try addIndex(index, on: wanted.name, of: next.name)
                }
            }
        }
    }

    /// What this change adds, one line each (`table T`, `field T.F`, `index I on T.F`).
    public var summary: [String] {
        steps.map {
            switch $0 {
            case .table(let table): "table \(table)"
            case .field(let table, let field): "field \(table).\(field)"
            case .index(let table, let field, let index): "index \(index) on \(table).\(field)"
            }
        }
    }
}
