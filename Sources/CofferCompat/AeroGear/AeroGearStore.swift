import Coffer
import Foundation

extension AeroGear {
    /// One value of an AeroGear data store record, as its property list
    /// held it; `sealed` is a data value, still as the app sealed it.
    public enum Value: Sendable, Hashable, CustomStringConvertible {
        case text(String)
        case integer(Int64)
        case real(Double)
        case boolean(Bool)
        case date(Date)
        case data(Data)

        /// The kind only: a value may be private.
        public var description: String {
            switch self {
            case .text(let text): "text (\(text.utf8.count) bytes)"
            case .integer: "an integer"
            case .real: "a real number"
            case .boolean: "a boolean"
            case .date: "a date"
            case .data(let data): "data (\(data.count) bytes)"
            }
        }
    }

    /// One record: its place in the store and its fields by name.
    public struct Record: Sendable, Hashable {
        /// Its place in the store's array, from 1.
        public let number: Int
        public var fields: [String: Value]

        public init(number: Int, fields: [String: Value]) {
            self.number = number
            self.fields = fields
        }

        /// How errors name it: its place, and its id when the id is text or
        /// a number (ids are clear in the store).
        public var name: String {
            switch fields["id"] {
            case .text(let id)?: "record \(number) (id \"\(id.prefix(64))\")"
            case .integer(let id)?: "record \(number) (id \(id))"
            default: "record \(number)"
            }
        }
    }

    /// An AeroGear `PLIST` data store (AGPropertyListStorage): the array
    /// of dictionaries the app wrote with `writeToFile:atomically:`, XML or
    /// binary, read with Foundation's property list parser and then
    /// checked shape by shape; anything else is a clear `malformed`.
    public struct PropertyListStore: Sendable {
        /// A store larger than this is refused before it is parsed (the
        /// Xmas app's are a few kilobytes).
        public static let maximumSize = 16 << 20
        /// More records than this are refused.
        public static let maximumRecords = 1_000_000

        public let records: [Record]

        /// - Parameter bytes: the store file (`Documents/NAME` in the app).
        public init(propertyList bytes: some Collection<UInt8>) throws {
            let root = try AeroGear.propertyList(bytes, what: "the AeroGear store")
            if let dictionary = root as? [String: Any], !dictionary.isEmpty,
                dictionary.values.allSatisfy({ $0 is Data })
            {
                throw CofferError(
                    .unsupported,
                    "this is an AeroGear encrypted store (ENCRYPTED_PLIST: a dictionary of \(dictionary.count) sealed records), not a PLIST store; Coffer cannot read it (docs/compat.md, \"AeroGear's encrypted stores\")"
                )
            }
            guard let array = root as? [Any] else {
                throw CofferError(
                    .malformed, "the AeroGear store is not an array of records (its top level is \(Self.kind(root)))")
            }
            guard array.count <= Self.maximumRecords else {
                throw CofferError(
                    .malformed, "the AeroGear store has \(array.count) records; at most \(Self.maximumRecords) are read"
                )
            }
            var records: [Record] = []
            records.reserveCapacity(array.count)
            for (index, element) in array.enumerated() {
                guard let dictionary = element as? [String: Any] else {
                    throw CofferError(.malformed, "record \(index + 1) is \(Self.kind(element)), not a dictionary")
                }
                var fields: [String: Value] = [:]
                for (key, value) in dictionary {
                    guard let converted = Self.value(value) else {
                        throw CofferError(
                            .malformed,
                            "field \"\(key.prefix(64))\" of record \(index + 1) is \(Self.kind(value)): a record's fields are text, numbers, booleans, dates and data"
                        )
                    }
                    fields[key] = converted
                }
                records.append(Record(number: index + 1, fields: fields))
            }
            self.records = records
        }

        static func value(_ value: Any) -> Value? {
            switch value {
            case let text as String: return .text(text)
            case let data as Data: return .data(data)
            case let date as Date: return .date(date)
            case let number as NSNumber:
                // CFBoolean says "c"; reals "d" or "f"; every other NSNumber
                // in a property list is an integer.
                switch String(cString: number.objCType) {
                case "c": return .boolean(number.boolValue)
                case "d", "f": return .real(number.doubleValue)
                default: return .integer(number.int64Value)
                }
            default: return nil
            }
        }

        static func kind(_ value: Any) -> String {
            switch value {
            case is [Any]: "an array"
            case is [String: Any], is [AnyHashable: Any]: "a dictionary"
            case is String: "text"
            case is Data: "data"
            case is Date: "a date"
            case is NSNumber: "a number"
            default: "of another type"
            }
        }
    }

    /// What the app kept in NSUserDefaults for one store: the salt under
    /// `PREFIX.salt`, the IV under `PREFIX.IV` or `PREFIX.iv` (0.1.0 –
    /// 0.2.1), or the nonce under `PREFIX.nonce` (0.2.2 and later). One IV
    /// or nonce served every value: the seed's own mistake, which a
    /// migration into a `CofferStore` ends.
    public struct Parameters: Sendable, Hashable {
        public let salt: [UInt8]
        public let ivOrNonce: [UInt8]
        public let generation: Generation

        /// Parameters given directly; the generation is the IV's or nonce's
        /// unless named, and a named one must match its length.
        public init(salt: [UInt8], ivOrNonce: [UInt8], generation: Generation? = nil) throws {
            let found = try Generation(ivOrNonce: ivOrNonce)
            if let generation, generation != found {
                throw CofferError(
                    .invalidArgument,
                    "\(generation) takes a \(generation == .cbc ? 16 : 24)-byte \(generation == .cbc ? "IV" : "nonce"), not \(ivOrNonce.count) bytes"
                )
            }
            guard salt.count >= 8, salt.count <= 1024 else {
                throw CofferError(
                    .malformed, "an AeroGear salt is 8 to 1,024 bytes (16 as the app made it), not \(salt.count)")
            }
            self.salt = salt
            self.ivOrNonce = ivOrNonce
            self.generation = found
        }

        /// Reads them from the app's defaults property list (XML or binary:
        /// `Library/Preferences/BUNDLE-ID.plist`).
        ///
        /// When the defaults hold both an IV and a nonce (an app that moved
        /// from 0.2.1 to 0.2.2), `generation` must say which sealed the data.
        public init(defaults bytes: some Collection<UInt8>, prefix: String, generation: Generation? = nil) throws {
            let root = try AeroGear.propertyList(bytes, what: "the defaults")
            guard let defaults = root as? [String: Any] else {
                throw CofferError(.malformed, "the defaults are not a dictionary (\(PropertyListStore.kind(root)))")
            }
            func data(_ key: String) throws -> [UInt8]? {
                guard let value = defaults[key] else { return nil }
                guard let data = value as? Data else {
                    throw CofferError(
                        .malformed, "\(key) in the defaults is \(PropertyListStore.kind(value)), not data")
                }
                return Array(data)
            }
            guard let salt = try data(prefix + ".salt") else {
                throw CofferError(
                    .invalidArgument,
                    "the defaults have no \(prefix).salt (keys with that prefix: \(Self.keys(defaults, prefix)))")
            }
            let iv = try data(prefix + ".IV") ?? data(prefix + ".iv")
            let nonce = try data(prefix + ".nonce")
            let chosen: [UInt8]
            switch (iv, nonce, generation) {
            case (let iv?, nil, _), (let iv?, _, .cbc?): chosen = iv
            case (nil, let nonce?, _), (_, let nonce?, .secretBox?): chosen = nonce
            case (.some, .some, nil):
                throw CofferError(
                    .invalidArgument,
                    "the defaults hold both an IV and a nonce for \(prefix): name the generation that sealed the data (cbc or secretbox)"
                )
            case (nil, nil, _):
                throw CofferError(
                    .invalidArgument,
                    "the defaults have no \(prefix).IV, \(prefix).iv or \(prefix).nonce (keys with that prefix: \(Self.keys(defaults, prefix)))"
                )
            }
            try self.init(salt: salt, ivOrNonce: chosen, generation: generation)
        }

        static func keys(_ defaults: [String: Any], _ prefix: String) -> String {
            let keys = defaults.keys.filter { $0.hasPrefix(prefix + ".") }.sorted()
            return keys.isEmpty ? "none" : keys.prefix(8).joined(separator: ", ")
        }
    }

    /// Every data value of every record opened with the key from
    /// `password` (derived once), in the store's order; every other value
    /// as it was. The first value that does not open stops it, naming its
    /// record and field: a migration takes all of the store or none of it.
    ///
    /// ```swift
    /// let store = try AeroGear.PropertyListStore(propertyList: try Data(contentsOf: storeFile))
    /// let parameters = try AeroGear.Parameters(defaults: try Data(contentsOf: defaultsFile), prefix: "")
    /// let records = try AeroGear.open(store, parameters: parameters, password: typed)
    /// ```
    public static func open(_ store: PropertyListStore, parameters: Parameters, password: String) throws -> [Record] {
        let key = try AeroGear.key(password: password, salt: parameters.salt, generation: parameters.generation)
        return try store.records.map { record in
            var opened = record
            for (name, value) in record.fields {
                guard case .data(let sealed) = value else { continue }
                do {
                    opened.fields[name] = .data(
                        try AeroGear.open(
                            sealed, ivOrNonce: parameters.ivOrNonce, key: key, generation: parameters.generation))
                } catch let error as CofferError {
                    throw CofferError(error.code, "\(record.name), field \"\(name)\": \(error.description)")
                }
            }
            return opened
        }
    }

    /// A property list, XML or binary, parsed by Foundation after a size
    /// check; its errors said plainly.
    static func propertyList(_ bytes: some Collection<UInt8>, what: String) throws -> Any {
        guard bytes.count <= PropertyListStore.maximumSize else {
            throw CofferError(
                .malformed, "\(what) is \(bytes.count) bytes; at most \(PropertyListStore.maximumSize) are read")
        }
        let data = Data(bytes)
        guard
            data.starts(with: Array("bplist00".utf8)) || data.starts(with: Array("<?xml".utf8))
                || data.starts(with: Array("<plist".utf8)) || data.starts(with: [0xEF, 0xBB, 0xBF])
        else {
            throw CofferError(.malformed, "\(what) is not a property list (neither binary \"bplist00\" nor XML)")
        }
        if data.starts(with: Array("bplist00".utf8)) { try BinaryPropertyListBounds.check(data, what: what) }
        do {
            var format = PropertyListSerialization.PropertyListFormat.binary
            let root = try PropertyListSerialization.propertyList(from: data, options: [], format: &format)
            guard format == .binary || format == .xml else {
                throw CofferError(.malformed, "\(what) is an old-style property list, which AeroGear never wrote")
            }
            return root
        } catch let error as CofferError {
            throw error
        } catch {
            let reason = (error as NSError).userInfo["NSDebugDescription"] as? String
            throw CofferError(
                .malformed,
                "\(what) is not a well-formed property list\(reason.map { " (\($0.prefix(120)))" } ?? "")")
        }
    }
}
