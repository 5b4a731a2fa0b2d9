import ArgumentParser
import Coffer
import CofferStore

/// The record a command acts on: `--table T --id ID`, the id read as the primary key's type.
struct StoreRow: ParsableArguments {
    @Option(help: "The table.") var table: String
    @Option(help: "The primary key.") var id: String

    func resolve(in store: RecordStore) throws -> (StoreSchema.Table, StoreValue) {
        let table = try store.schema.table(table)
        return (table, try StoreJSON.argument(id, field: table.field(table.primaryKey)!, table: table.name))
    }

    func missing(_ table: StoreSchema.Table) -> CLIFailure {
        CLIFailure("\(table.name) has no record \(id)", status: 1)
    }
}

extension StoreSchema.Table {
    /// This table with its primary key only, to print a key as a record.
    var keyOnly: StoreSchema.Table {
        StoreSchema.Table(name: name, primaryKey: primaryKey, fields: fields.filter { $0.name == primaryKey })
    }
}
