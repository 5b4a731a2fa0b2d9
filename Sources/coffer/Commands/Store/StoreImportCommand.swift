import ArgumentParser
import Coffer
import CofferCompat
import CofferStore
import Foundation

extension AeroGear.Generation: ExpressibleByArgument {
    public init?(argument: String) {
        switch argument {
        case "cbc": self = .cbc
        case "secretbox": self = .secretBox
        default: return nil
        }
    }

    public static var allValueStrings: [String] { ["cbc", "secretbox"] }
}

/// `coffer store import`: what an old app stored, moved into a table in one
/// transaction (docs/compat.md, "AeroGear").
struct StoreImport: AsyncParsableCommand {
    enum Source: String, ExpressibleByArgument, CaseIterable {
        case aerogearPlist = "aerogear-plist"
    }

    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Move an AeroGear data store (the seed's Xmas app) into a table, in one transaction.",
        discussion: """
            Reads every record of the AeroGear PLIST store, opens every data value with the key from the \
            password and the salt and IV or nonce the app kept in its defaults under PREFIX.salt and \
            PREFIX.IV, PREFIX.iv or PREFIX.nonce, and puts the records into the table in one transaction. \
            A wrong password, or one value that does not open, imports nothing and names the record. The \
            dictionaries' keys are field names; the table's schema decides what is sealed and bound. Prints \
            each primary key. CBC data (AeroGear-Crypto before 0.2.2) cannot be authenticated: it is checked \
            by its padding and UTF-8 only.
            """)

    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @Option(help: "The table to fill.") var table: String
    @Option(help: "What the file is: aerogear-plist.") var from: Source
    @OptionGroup var aeroGear: AeroGearOptions
    @Option(
        name: .customLong("aerogear-generation"),
        help: "cbc (AeroGear-Crypto 0.1.0 – 0.2.1) or secretbox (0.2.2 –); read from the IV or nonce when absent.")
    var generation: AeroGear.Generation?
    @Argument(help: "The AeroGear store file (Documents/NAME in the app).")
    var file: String

    func run() async throws {
        // Everything about the old data is checked before a password is
        // asked for or the store's key is stretched.
        let old = try AeroGear.PropertyListStore(
            propertyList: try Input.readAll(path: file, what: "the AeroGear store"))
        let parameters = try aeroGear.parameters(
            generation: generation, defaultPrefix: URL(fileURLWithPath: file).lastPathComponent, hexAllowed: false)
        let opened = try aeroGear.hintingPassword {
            try AeroGear.open(old, parameters: parameters, password: try aeroGear.password())
        }

        let target = try await store.open(kek)
        let table = try target.schema.table(table)
        let records = try opened.map { try Self.storeRecord($0, table: table) }
        let keys = try await target.put(contentsOf: records, into: table.name)
        var lines = ""
        for key in keys { lines += RecordJSON.line([table.primaryKey: key], table: table.keyOnly) + "\n" }
        print(lines, terminator: "")
        StandardError.write(
            "coffer: imported \(keys.count) records from \(file) (AeroGear \(parameters.generation == .cbc ? "AES-128-CBC, unauthenticated" : "secretbox")) into \(table.name)\n"
        )
    }

    /// One AeroGear record as a record of `table`: text, opened data as
    /// UTF-8 text or bytes, integers and booleans as integers; a field the
    /// table lacks, or a value its type cannot hold, is an error naming
    /// the record.
    static func storeRecord(_ record: AeroGear.Record, table: StoreSchema.Table) throws -> StoreRecord {
        var converted: StoreRecord = [:]
        for (name, value) in record.fields {
            guard let field = table.field(name) else {
                throw CofferError(.invalidArgument, "\(record.name): \(table.name) has no field \"\(name.prefix(64))\"")
            }
            let stored: StoreValue? =
                switch (field.type, value) {
                case (.text, .text(let text)): .text(text)
                case (.text, .data(let data)): String(validating: data, as: UTF8.self).map(StoreValue.text)
                case (.text, .date(let date)): .text(date.formatted(.iso8601))
                case (.integer, .integer(let number)): .integer(number)
                case (.integer, .boolean(let flag)): .integer(flag ? 1 : 0)
                case (.double, .real(let number)) where number.isFinite: .double(number)
                case (.date, .date(let date)): .date(date)
                case (.bytes, .data(let data)): .bytes(Array(data))
                default: nil
                }
            guard let stored else {
                throw CofferError(
                    .invalidArgument,
                    "\(record.name): field \"\(name)\" is \(value), which a \(field.type.name) field cannot hold")
            }
            converted[name] = stored
        }
        return converted
    }
}
