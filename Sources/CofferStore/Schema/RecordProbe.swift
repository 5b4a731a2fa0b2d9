import Coffer
import Foundation

/// Learns a record type's stored properties and their field types by
/// decoding one from placeholders: the keys its `init(from:)` asks for,
/// in order, and the Swift type asked for each.
enum RecordProbe {
    struct Property {
        var name: String
        var type: StoreSchema.FieldType
    }

    final class Log {
        var properties: [Property] = []
        var problem: CofferError?
    }

    static func properties<R: Decodable>(of type: R.Type) throws -> [Property] {
        let log = Log()
        do { _ = try R(from: ProbeDecoder(log: log, key: nil)) } catch {
            throw log.problem
                ?? CofferError(
                    .invalidArgument,
                    "\(R.self) does not decode from placeholder values, so its fields cannot be read: \(error)")
        }
        var seen = Set<String>()
        return log.properties.filter { seen.insert($0.name).inserted }
    }

    /// The field type a property of Swift type `T` is stored as, and a placeholder of it.
    static func placeholder<T: Decodable>(_ type: T.Type, key: String, log: Log) throws -> (StoreSchema.FieldType, T) {
        if let direct = StoreSchema.FieldType.placeholder(T.self) { return direct }
        switch T.self {
        default:
            if let cases = T.self as? any CaseIterable.Type, let first = first(of: cases) as? T {
                // An enum of raw values: its raw type's field, read by encoding a case.
                let value = try StoreValue(encoding: AnyEncodable(first as! any Encodable))
                if let type = value.type { return (type, first) }
            }
            let inner = Log()
            let value: T
            do { value = try T(from: ProbeDecoder(log: inner, key: key)) } catch is DecodingError {
                throw CofferError(
                    .invalidArgument,
                    "\(key) is a \(T.self), which refuses a placeholder value: make it CaseIterable, so its first case stands in"
                )
            }
            guard let single = inner.properties.first, inner.properties.count == 1 else {
                throw CofferError(
                    .invalidArgument,
                    "\(key) is a \(T.self), which is not one value a field holds (a String, an integer, a Bool, a Date, Data, a Double, or an enum of those that is CaseIterable)"
                )
            }
            return (single.type, value)
        }
    }

    static func first<C: CaseIterable>(of type: C.Type) -> Any? { C.allCases.first }

    struct AnyEncodable: Encodable {
        let value: any Encodable
        init(_ value: any Encodable) { self.value = value }
        func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
    }

    struct ProbeDecoder: Decoder {
        let log: Log
        /// The property decoded as one value (an enum's raw value); nil at the top.
        let key: String?
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            if let key {
                let problem = CofferError(
                    .invalidArgument, "\(key) is a structure: a field holds one value (encode it to Data or a String)")
                log.problem = problem
                throw problem
            }
            return KeyedDecodingContainer(Keyed<Key>(log: log))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let problem = CofferError(
                .invalidArgument,
                "\(key ?? "the record") is a list: a field holds one value (encode it to Data or a String)")
            log.problem = problem
            throw problem
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            guard let key else {
                throw CofferError(.invalidArgument, "a record is a set of fields, not one value")
            }
            return Single(log: log, key: key)
        }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let log: Log
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }
        /// Never nil, so that an optional's type is asked for too.
        func decodeNil(forKey key: Key) throws -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            do {
                let (field, value) = try RecordProbe.placeholder(T.self, key: key.stringValue, log: log)
                log.properties.append(Property(name: key.stringValue, type: field))
                return value
            } catch let error as CofferError {
                if log.problem == nil { log.problem = error }
                throw error
            }
        }
        func nestedContainer<N: CodingKey>(keyedBy type: N.Type, forKey key: Key) throws -> KeyedDecodingContainer<N> {
            let problem = CofferError(.invalidArgument, "\(key.stringValue) is a structure: a field holds one value")
            log.problem = problem
            throw problem
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            let problem = CofferError(.invalidArgument, "\(key.stringValue) is a list: a field holds one value")
            log.problem = problem
            throw problem
        }
        func superDecoder() throws -> any Decoder { ProbeDecoder(log: log, key: nil) }
        func superDecoder(forKey key: Key) throws -> any Decoder { ProbeDecoder(log: log, key: key.stringValue) }
    }

    struct Single: SingleValueDecodingContainer {
        let log: Log
        let key: String
        var codingPath: [any CodingKey] { [] }
        func decodeNil() -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let (field, value) = try RecordProbe.placeholder(T.self, key: key, log: log)
            log.properties.append(Property(name: key, type: field))
            return value
        }
    }
}
