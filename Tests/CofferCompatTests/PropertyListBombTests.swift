import Coffer
import Foundation
import Testing

@testable import CofferCompat

/// H6 of the fourth security review: binary property lists that refer to
/// their objects many times. Each is refused with a clear error before
/// Foundation expands it — in well under a second and a few MiB, as
/// docs/compat.md says — while lists that share their key strings, as
/// every real writer does, still read.
@Suite struct PropertyListBombTests {
    /// A binary property list of `objects` (each already encoded), 4-byte
    /// offsets and references, the top object first.
    static func binary(_ objects: [[UInt8]]) -> [UInt8] {
        var bytes = Array("bplist00".utf8)
        var offsets: [UInt32] = []
        for object in objects {
            offsets.append(UInt32(bytes.count))
            bytes += object
        }
        let table = bytes.count
        for offset in offsets { withUnsafeBytes(of: offset.bigEndian) { bytes += $0 } }
        bytes += [0, 0, 0, 0, 0, 0, 4, 4]
        for value in [UInt64(objects.count), 0, UInt64(table)] { withUnsafeBytes(of: value.bigEndian) { bytes += $0 } }
        return bytes
    }

    /// An array marker for `count` references, then the references.
    static func array(_ references: [UInt32]) -> [UInt8] {
        var bytes: [UInt8] = [0xAF, 0x12]
        withUnsafeBytes(of: UInt32(references.count).bigEndian) { bytes += $0 }
        for reference in references { withUnsafeBytes(of: reference.bigEndian) { bytes += $0 } }
        return bytes
    }

    /// 24 levels of arrays, each holding the next 16 times, over one
    /// empty record: 1.6 KB that would expand to 16²⁴ records.
    static let bomb: [UInt8] = binary((0..<24).map { array(Array(repeating: UInt32($0 + 1), count: 16)) } + [[0xD0]])

    static func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        return (statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0)
            * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test func aReferenceBombIsRefusedAtOnce() throws {
        #expect(Self.bomb.count < 2048)
        let before = Self.residentBytes()
        let start = ContinuousClock.now
        let error = #expect(throws: CofferError.self) { _ = try AeroGear.PropertyListStore(propertyList: Self.bomb) }
        let took = ContinuousClock.now - start
        #expect(error?.code == .malformed)
        #expect(error?.description.contains("reference bomb") == true, "\(String(describing: error))")
        #expect(took < .seconds(1), "took \(took)")
        #expect(Self.residentBytes() - before < 64 << 20)
        // The legacy recipe's envelope reads property lists too.
        #expect(throws: CofferError.self) { _ = try LegacyRecipe.envelope(Self.bomb) }
    }

    @Test func oneValueRepeatedPastItsSizeIsRefused() throws {
        // One 1 MiB data value, referred to 64 times: 64 MiB from 1 MiB.
        let blob: [UInt8] =
            [0x4F, 0x12] + withUnsafeBytes(of: UInt32(1 << 20).bigEndian, Array.init)
            + [UInt8](repeating: 7, count: 1 << 20)
        let list = Self.binary([Self.array(Array(repeating: 1, count: 64)), blob])
        let error = #expect(throws: CofferError.self) { _ = try AeroGear.PropertyListStore(propertyList: list) }
        #expect(error?.description.contains("bytes of text and data") == true, "\(String(describing: error))")
    }

    @Test func cyclesAndBrokenTablesAreRefused() throws {
        // An array that holds itself.
        let cycle = Self.binary([Self.array([0])])
        let error = #expect(throws: CofferError.self) { _ = try AeroGear.PropertyListStore(propertyList: cycle) }
        #expect(error?.description.contains("holds itself") == true, "\(String(describing: error))")
        // A reference past the last object, and a trailer claiming more objects than there are bytes.
        for list in [
            Self.binary([Self.array([5])]), Self.binary([[0xD0]]).dropLast(24) + [UInt8](repeating: 0xFF, count: 24),
        ] {
            let refused = #expect(throws: CofferError.self) { _ = try AeroGear.PropertyListStore(propertyList: list) }
            #expect(refused?.code == .malformed)
        }
    }

    @Test func aStoreThatSharesItsKeysReads() throws {
        // Foundation's writer, as NSArray's writeToFile does: the keys are
        // written once and referred to by every record.
        let records = (0..<2000).map {
            ["id": "id-\($0)", "toWhom": "Sam", "description": Data(count: 16)] as [String: Any]
        }
        let data = try PropertyListSerialization.data(fromPropertyList: records, format: .binary, options: 0)
        try BinaryPropertyListBounds.check(data, what: "the store")
        let store = try AeroGear.PropertyListStore(propertyList: Array(data))
        #expect(store.records.count == 2000)
    }

    /// Found by the `plist` fuzz target (fuzz/regressions/plist/): a set of
    /// data crashed Foundation on Linux as it bridged it. Sets, and
    /// dictionary keys that are not strings, are refused before Foundation
    /// reads the list.
    @Test func setsAndKeysThatAreNotStringsAreRefused() throws {
        let found = try Data(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(
                    "fuzz/regressions/plist/set-of-data-crashes-foundation"))
        let set = Self.binary([[0xC1, 0x00, 0x00, 0x00, 0x01], [0x41, 0x07]])
        let dataKey = Self.binary([[0xD1, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01], [0x41, 0x07]])
        for (list, says) in [(Array(found), "is a set"), (set, "is a set"), (dataKey, "key that is not a string")] {
            let error = #expect(throws: CofferError.self) { _ = try AeroGear.PropertyListStore(propertyList: list) }
            #expect(
                error?.code == .malformed && error?.description.contains(says) == true, "\(String(describing: error))")
        }
        // A dictionary with string keys still reads.
        let named = Self.binary([[0xD1, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02], [0x51, 0x61], [0x41, 0x07]])
        try BinaryPropertyListBounds.check(Data(named), what: "the list")
    }
}
