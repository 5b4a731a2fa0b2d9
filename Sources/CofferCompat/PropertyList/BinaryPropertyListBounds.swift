import Coffer
import Foundation

/// What a binary property list expands to, worked out from its object
/// table before Foundation reads it (security review 4, H6). A binary
/// property list names each object once and refers to it by number, so an
/// array can hold the same array many times, and that array the same
/// array again: a few kilobytes that Foundation expands — a new object per
/// reference — into billions of objects. Walked here once per object, with
/// what each expands to remembered, the list's expanded size is known in
/// time proportional to its table, and a list that would expand past
/// ``maximumValues`` values or ``maximumBytes(for:)`` bytes of strings and
/// data is refused before anything is expanded. (The format: Apple's
/// CFBinaryPList.c, whose header documents the markers read here.)
enum BinaryPropertyListBounds {
    /// The most objects a list may hold: an AeroGear store of a million
    /// records (the import's limit) holds about four million.
    static let maximumObjects = 5_000_000
    /// The most values a list may expand to: a million records of three
    /// fields are seven million.
    static let maximumValues = 8_000_000

    /// The most bytes of strings and data a list of `size` bytes may expand
    /// to: a list whose values are each written once expands to less than
    /// its own size; one that repeats a value many times is refused.
    static func maximumBytes(for size: Int) -> Int { 2 * size + (1 << 20) }

    /// Throws `malformed` when `data`, a binary property list, is not
    /// well formed where this reads it, holds a reference cycle, or expands
    /// past the bounds; `what` names it in the error.
    static func check(_ data: Data, what: String) throws {
        try data.withUnsafeBytes { raw in
            var walk = Walk(bytes: raw, what: what)
            try walk.run()
        }
    }

    private struct Walk {
        let bytes: UnsafeRawBufferPointer
        let what: String
        var offsetSize = 0
        var referenceSize = 0
        var objects = 0
        var top = 0
        var table = 0

        init(bytes: UnsafeRawBufferPointer, what: String) {
            self.bytes = bytes
            self.what = what
        }

        func malformed(_ reason: String) -> CofferError {
            CofferError(.malformed, "\(what) is not a well-formed property list (\(reason))")
        }

        /// A big-endian unsigned integer of `size` bytes at `offset`.
        func integer(at offset: Int, size: Int) throws -> Int {
            guard size >= 1, size <= 8, offset >= 0, offset <= bytes.count - size else {
                throw malformed("a number runs past the end")
            }
            var value: UInt64 = 0
            for index in offset..<offset + size { value = value << 8 | UInt64(bytes[index]) }
            guard value <= UInt64(Int.max) else { throw malformed("a number is out of range") }
            return Int(value)
        }

        mutating func run() throws {
            guard bytes.count >= 8 + 32 else { throw malformed("it is shorter than its header and trailer") }
            let trailer = bytes.count - 32
            offsetSize = Int(bytes[trailer + 6])
            referenceSize = Int(bytes[trailer + 7])
            objects = try integer(at: trailer + 8, size: 8)
            top = try integer(at: trailer + 16, size: 8)
            table = try integer(at: trailer + 24, size: 8)
            guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
                throw malformed("its trailer's sizes are out of range")
            }
            guard objects >= 1, objects <= Self.maximumObjects(bytes.count), top < objects else {
                throw malformed("its trailer counts \(objects) objects")
            }
            guard table >= 8, objects <= (trailer - table) / offsetSize else {
                throw malformed("its offset table runs past the end")
            }
            try expand()
        }

        static func maximumObjects(_ size: Int) -> Int { min(BinaryPropertyListBounds.maximumObjects, size) }

        /// An object's children (references) and the bytes of its own
        /// string or data, read from its marker.
        func object(_ index: Int) throws -> (children: Range<Int>?, width: Int, bytes: Int) {
            let offset = try integer(at: table + index * offsetSize, size: offsetSize)
            guard offset >= 8, offset < table else { throw malformed("object \(index) lies outside the objects") }
            let marker = bytes[offset]
            let (kind, small) = (marker >> 4, Int(marker & 0x0F))
            func count() throws -> (count: Int, start: Int) {
                guard small == 0x0F else { return (small, offset + 1) }
                guard offset + 1 < table, bytes[offset + 1] >> 4 == 0x1 else {
                    throw malformed("object \(index) has a bad count")
                }
                let size = 1 << Int(bytes[offset + 1] & 0x0F)
                guard size <= 8 else { throw malformed("object \(index) has a bad count") }
                return (try integer(at: offset + 2, size: size), offset + 2 + size)
            }
            switch kind {
            case 0x4, 0x5, 0x6:  // data, ASCII string, UTF-16 string
                let (length, start) = try count()
                let size = length.multipliedReportingOverflow(by: kind == 0x6 ? 2 : 1)
                guard !size.overflow, size.partialValue <= table - start else {
                    throw malformed("object \(index) runs past the objects")
                }
                return (nil, 0, size.partialValue)
            case 0xC:
                // No property list Coffer reads holds a set, and Foundation on
                // Linux crashed bridging one the fuzzer made (a set of data).
                throw malformed("object \(index) is a set, which no AeroGear property list holds")
            case 0xA, 0xD:  // array, dictionary (keys, then values)
                let (length, start) = try count()
                let references = length.multipliedReportingOverflow(by: kind == 0xD ? 2 : 1)
                let span = references.partialValue.multipliedReportingOverflow(by: referenceSize)
                guard !references.overflow, !span.overflow, span.partialValue <= table - start else {
                    throw malformed("object \(index) holds more references than the list has bytes")
                }
                if kind == 0xD { try checkKeys(of: index, count: length, at: start) }
                return (start..<start + span.partialValue, referenceSize, 0)
            default:
                return (nil, 0, 0)
            }
        }

        /// A dictionary's keys are strings, as in every property list Coffer
        /// reads (Foundation on Linux bridges other keys unsafely).
        func checkKeys(of index: Int, count: Int, at start: Int) throws {
            for number in 0..<count {
                let key = try integer(at: start + number * referenceSize, size: referenceSize)
                guard key < objects else { throw malformed("object \(index) names an object past the last") }
                let offset = try integer(at: table + key * offsetSize, size: offsetSize)
                guard offset >= 8, offset < table, [0x5, 0x6].contains(bytes[offset] >> 4) else {
                    throw malformed("object \(index) is a dictionary with a key that is not a string")
                }
            }
        }

        /// Every object reachable from the top, each once, children
        /// before parents (a stack, not recursion: a chain of 100,000
        /// nested arrays is walked like any other), with what each
        /// expands to: values and bytes, capped past the bounds.
        func expand() throws {
            let (valueCap, byteCap) = (BinaryPropertyListBounds.maximumValues, maximumBytes(for: bytes.count))
            var values = [UInt32](repeating: 0, count: objects)  // 0: not yet expanded
            var sizes = [UInt32](repeating: 0, count: objects)
            var open = [Bool](repeating: false, count: objects)
            var stack: [(index: Int, children: Range<Int>?, next: Int, values: Int, bytes: Int)] = []
            func push(_ index: Int) throws {
                let (children, _, own) = try object(index)
                open[index] = true
                stack.append((index, children, children?.lowerBound ?? 0, 1, own))
            }
            try push(top)
            while !stack.isEmpty {
                let last = stack.count - 1
                if let children = stack[last].children, stack[last].next < children.upperBound {
                    let child = try integer(at: stack[last].next, size: referenceSize)
                    stack[last].next += referenceSize
                    guard child < objects else { throw malformed("a reference names object \(child) of \(objects)") }
                    if open[child] { throw malformed("object \(child) holds itself") }
                    if values[child] == 0 {
                        try push(child)
                        continue
                    }
                    stack[last].values = min(valueCap + 1, stack[last].values + Int(values[child]))
                    stack[last].bytes = min(byteCap + 1, stack[last].bytes + Int(sizes[child]))
                    continue
                }
                let done = stack.removeLast()
                guard done.values <= valueCap, done.bytes <= byteCap else {
                    throw CofferError(
                        .malformed,
                        "\(what) refers to its objects so many times that it would expand past \(done.values > valueCap ? "\(valueCap) values" : "\(byteCap) bytes of text and data") (a reference bomb); it is refused before it is read"
                    )
                }
                open[done.index] = false
                values[done.index] = UInt32(done.values)
                sizes[done.index] = UInt32(done.bytes)
                if let parent = stack.indices.last {
                    stack[parent].values = min(valueCap + 1, stack[parent].values + done.values)
                    stack[parent].bytes = min(byteCap + 1, stack[parent].bytes + done.bytes)
                }
            }
        }
    }
}
