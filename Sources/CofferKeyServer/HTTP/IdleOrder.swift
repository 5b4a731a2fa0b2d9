#if Server
/// Identifiers in the order they were appended (appending one already
/// there moves it to the end): a doubly linked list threaded through a
/// dictionary, so that appending, removing and reading the first are O(1).
struct IdleOrder {
    private var links: [ObjectIdentifier: (previous: ObjectIdentifier?, next: ObjectIdentifier?)] = [:]
    /// The one appended longest ago.
    private(set) var first: ObjectIdentifier?
    private var last: ObjectIdentifier?

    var count: Int { links.count }

    mutating func append(_ id: ObjectIdentifier) {
        remove(id)
        links[id] = (last, nil)
        if let last { links[last]?.next = id } else { first = id }
        last = id
    }

    mutating func remove(_ id: ObjectIdentifier) {
        guard let link = links.removeValue(forKey: id) else { return }
        if let previous = link.previous { links[previous]?.next = link.next } else { first = link.next }
        if let next = link.next { links[next]?.previous = link.previous } else { last = link.previous }
    }

    /// Every identifier, first to last.
    var ordered: [ObjectIdentifier] {
        var result: [ObjectIdentifier] = []
        var cursor = first
        while let id = cursor {
            result.append(id)
            cursor = links[id]?.next
        }
        return result
    }
}
#endif
