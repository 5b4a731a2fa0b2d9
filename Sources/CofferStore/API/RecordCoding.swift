import Coffer
import Foundation

/// Turns a `Codable` value into a record and back, one field per stored
/// property (``SealedRecord``). A field holds one value: `String` as text;
/// `Int`, the sized integers and `Bool` (0 or 1) as integers; `Date` as a
/// date (whole milliseconds since 1970); `Double` and `Float` as doubles;
/// `Data` as bytes; nil as null (``StoreSchema/FieldType``); a type that encodes one such value (a `RawRepresentable` enum)
/// as that value. Nested structures and arrays are refused: encode them
/// to `Data` or a `String` first.
enum RecordCoding {
    static func record(of value: some Encodable) throws -> StoreRecord {
        let encoder = FieldEncoder(field: nil)
        try value.encode(to: encoder)
        guard let record = encoder.record else {
            throw CofferError(
                .invalidArgument, "\(type(of: value)) does not encode as a record of fields (a struct of values)")
        }
        return record
    }

    static func value<R: Decodable>(_ type: R.Type, from record: StoreRecord, table: String) throws -> R {
        do {
            return try R(from: FieldDecoder(record: record, value: nil, table: table))
        } catch let error as CofferError {
            throw error
        } catch DecodingError.keyNotFound(let key, _) {
            throw CofferError(.invalidArgument, "\(table) has no field \(key.stringValue) for \(R.self)")
        } catch {
            // Not the error's description: it may quote a (maybe sealed) value.
            throw CofferError(.invalidArgument, "a record of \(table) does not decode as \(R.self)")
        }
    }

    /// The fields a decoding of `R` asks for: the type's own.
    static func fieldsRead<R: Decodable>(by type: R.Type, from record: StoreRecord, table: String) throws -> Set<String>
    {
        let log = FieldDecoder.Log()
        _ = try R(from: FieldDecoder(record: record, value: nil, table: table, log: log))
        return log.names
    }

    static func mismatch(_ table: String, _ field: String, _ value: StoreValue, _ type: Any.Type) -> CofferError {
        CofferError(.invalidArgument, "\(table).\(field) holds \(value.kindName), which does not decode as \(type)")
    }
}

/// Encodes a record (the top level, keyed) or one field's value.
final class FieldEncoder: Encoder {
    let field: String?
    var record: StoreRecord?
    var value: StoreValue?
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(field: String?) { self.field = field }

    static func value(of value: some Encodable, field: String) throws -> StoreValue {
        if let direct = try direct(value, field: field) { return direct }
        let encoder = FieldEncoder(field: field)
        try value.encode(to: encoder)
        guard let encoded = encoder.value else {
            throw CofferError(
                .invalidArgument,
                "the field \(field) is a \(type(of: value)), a structure: a field holds one value (encode it to Data or a String first)"
            )
        }
        return encoded
    }

    /// The types stored as themselves, not as what their `encode(to:)`
    /// makes (``StoreSchema/FieldType``).
    static func direct(_ value: some Encodable, field: String) throws -> StoreValue? {
        try StoreSchema.FieldType.value(ofSwift: value, field: field)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if field == nil && record == nil { record = [:] }
        return KeyedEncodingContainer(Fields<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        record = nil
        return RefusedList(field: field ?? "the record")
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { Single(encoder: self) }

    struct Fields<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: FieldEncoder
        var codingPath: [any CodingKey] { [] }

        func set(_ value: StoreValue, _ key: Key) throws {
            guard encoder.field == nil, encoder.record != nil else {
                throw CofferError(
                    .invalidArgument,
                    "the field \(encoder.field ?? "") is a structure: a field holds one value (encode it to Data or a String first)"
                )
            }
            encoder.record![key.stringValue] = value
        }
        mutating func encodeNil(forKey key: Key) throws { try set(.null, key) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            try set(try FieldEncoder.value(of: value, field: key.stringValue), key)
        }
        mutating func nestedContainer<N: CodingKey>(keyedBy keyType: N.Type, forKey key: Key)
            -> KeyedEncodingContainer<N>
        {
            FieldEncoder(field: key.stringValue).container(keyedBy: N.self)
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            RefusedList(field: key.stringValue)
        }
        mutating func superEncoder() -> any Encoder { FieldEncoder(field: "super") }
        mutating func superEncoder(forKey key: Key) -> any Encoder { FieldEncoder(field: key.stringValue) }
    }

    struct Single: SingleValueEncodingContainer {
        let encoder: FieldEncoder
        var codingPath: [any CodingKey] { [] }
        mutating func encodeNil() throws { encoder.value = .null }
        mutating func encode<T: Encodable>(_ value: T) throws {
            encoder.value = try FieldEncoder.value(of: value, field: encoder.field ?? "the record")
        }
    }

    /// Lists have no column: every use throws.
    struct RefusedList: UnkeyedEncodingContainer {
        let field: String
        var codingPath: [any CodingKey] { [] }
        var count: Int { 0 }
        var refusal: CofferError {
            CofferError(
                .invalidArgument,
                "\(field) is a list: a field holds one value (encode the list to Data or a String first)")
        }
        mutating func encodeNil() throws { throw refusal }
        mutating func encode<T: Encodable>(_ value: T) throws { throw refusal }
        mutating func nestedContainer<N: CodingKey>(keyedBy keyType: N.Type) -> KeyedEncodingContainer<N> {
            FieldEncoder(field: field).container(keyedBy: N.self)
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
        mutating func superEncoder() -> any Encoder { FieldEncoder(field: field) }
    }
}

/// Decodes a record (the top level, keyed) or one field's value.
struct FieldDecoder: Decoder {
    let record: StoreRecord
    /// The field decoded, for a single value; nil at the top.
    let value: (name: String, value: StoreValue)?
    let table: String
    /// Where the names of the fields asked for go, when someone wants them.
    let log: Log?
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    final class Log { var names = Set<String>() }

    init(record: StoreRecord, value: (name: String, value: StoreValue)?, table: String, log: Log? = nil) {
        self.record = record
        self.value = value
        self.table = table
        self.log = log
    }

    static func decode<T: Decodable>(_ type: T.Type, _ value: StoreValue, field: String, table: String) throws -> T {
        if let direct = StoreSchema.FieldType.swiftValue(T.self, of: value) {
            // Only a value of the property's own field type: an integer
            // field (a count) is never read as a Double or a Date.
            guard let direct else { throw RecordCoding.mismatch(table, field, value, T.self) }
            return direct
        }
        do {
            return try T(from: FieldDecoder(record: [:], value: (field, value), table: table))
        } catch is DecodingError {
            // The type's own refusal (a raw value no case has) quotes the
            // value, which may be sealed: name the field instead.
            throw CofferError(.invalidArgument, "\(table).\(field) holds a value \(T.self) does not take")
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if let value {
            throw CofferError(
                .invalidArgument, "\(table).\(value.name) holds one value, which does not decode as a structure")
        }
        return KeyedDecodingContainer(Fields<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw CofferError(
            .invalidArgument, "\(table).\(value?.name ?? "?") holds one value, which does not decode as a list")
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        guard let value else {
            throw CofferError(.invalidArgument, "a record of \(table) is a set of fields, not one value")
        }
        return Single(name: value.name, value: value.value, table: table)
    }

    struct Fields<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: FieldDecoder
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { decoder.record.keys.compactMap { Key(stringValue: $0) } }
        func contains(_ key: Key) -> Bool {
            decoder.log?.names.insert(key.stringValue)
            return decoder.record[key.stringValue] != nil
        }
        func decodeNil(forKey key: Key) throws -> Bool {
            decoder.log?.names.insert(key.stringValue)
            return (decoder.record[key.stringValue] ?? .null) == .null
        }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            decoder.log?.names.insert(key.stringValue)
            guard let value = decoder.record[key.stringValue] else {
                throw CofferError(.invalidArgument, "\(decoder.table) has no field \(key.stringValue) for \(T.self)")
            }
            guard value != .null else {
                throw CofferError(
                    .invalidArgument,
                    "\(decoder.table).\(key.stringValue) is null; make the property optional to read records without it"
                )
            }
            return try FieldDecoder.decode(T.self, value, field: key.stringValue, table: decoder.table)
        }
        func nestedContainer<N: CodingKey>(keyedBy type: N.Type, forKey key: Key) throws -> KeyedDecodingContainer<N> {
            throw CofferError(.invalidArgument, "\(decoder.table).\(key.stringValue) holds one value, not a structure")
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw CofferError(.invalidArgument, "\(decoder.table).\(key.stringValue) holds one value, not a list")
        }
        func superDecoder() throws -> any Decoder { decoder }
        func superDecoder(forKey key: Key) throws -> any Decoder {
            FieldDecoder(
                record: [:], value: (key.stringValue, decoder.record[key.stringValue] ?? .null), table: decoder.table)
        }
    }

    struct Single: SingleValueDecodingContainer {
        let name: String
        let value: StoreValue
        let table: String
        var codingPath: [any CodingKey] { [] }
        func decodeNil() -> Bool { value == .null }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try FieldDecoder.decode(T.self, value, field: name, table: table)
        }
    }
}
