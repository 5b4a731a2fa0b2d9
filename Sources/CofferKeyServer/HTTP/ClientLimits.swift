#if Server
import Coffer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTPTypes

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How long clients may take and how many may be connected at once
/// (security review 3, G6): a connection that sends nothing, or sends its
/// headers a byte at a time, is closed at `idleTimeout`; a request whose
/// body has not ended `requestTimeout` after its head is closed; and past
/// `maximumConnections` a new connection closes the longest-idle one (a
/// connection between requests), so idle sockets never lock clients out.
public struct ClientLimits: Sendable {
    /// Without a whole request part (its head, a piece of its body), or
    /// between requests on a kept-alive connection.
    public var idleTimeout: Duration
    /// From a request's head to the end of its body.
    public var requestTimeout: Duration
    public var maximumConnections: Int

    /// 30 s idle, 10 s per request, and as many connections as a quarter
    /// below the process's open-file limit allows (at most 10,000).
    public init(
        idleTimeout: Duration = .seconds(30), requestTimeout: Duration = .seconds(10),
        maximumConnections: Int = ClientLimits.defaultMaximumConnections
    ) {
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.maximumConnections = maximumConnections
    }

    /// Three quarters of the open-file limit, so that connections never
    /// take the descriptors the database and the files need.
    public static var defaultMaximumConnections: Int {
        var limit = rlimit()
        #if canImport(Glibc)
        let files = Int32(RLIMIT_NOFILE.rawValue)
        #else
        let files = RLIMIT_NOFILE
        #endif
        guard getrlimit(files, &limit) == 0, limit.rlim_cur < 1 << 40 else {
            return 10_000
        }
        return max(16, min(10_000, Int(limit.rlim_cur) * 3 / 4))
    }

    /// Hummingbird's HTTP/1.1 channel with these limits: its idle timeout
    /// and a guard on every connection that enforces the rest.
    public func http1() -> HTTP1Channel.Configuration {
        let registry = ConnectionRegistry(maximum: maximumConnections)
        let requestTimeout = requestTimeout
        return HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionGuard(registry: registry, requestTimeout: requestTimeout)],
            idleTimeout: TimeAmount(idleTimeout))
    }
}

/// Every open connection, and those between requests in the order they
/// became idle: who to close when a new one comes past the maximum. Every
/// operation is O(1), so a flood of connections at the limit costs each
/// new one the same.
final class ConnectionRegistry: Sendable {
    struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var idle = IdleOrder()
    }

    let maximum: Int
    private let state = Locked(State())

    init(maximum: Int) { self.maximum = maximum }

    /// Registers `channel`; past the maximum, closes the connection idle
    /// the longest, or, when every one is in a request, refuses this one
    /// (false).
    func admit(_ channel: any Channel, id: ObjectIdentifier) -> Bool {
        enum Outcome {
            case admitted, refused
            case evicting(any Channel)
        }
        let outcome = state.withLock { state -> Outcome in
            var outcome = Outcome.admitted
            if state.channels.count >= maximum {
                guard let oldest = state.idle.first, let evicted = state.channels.removeValue(forKey: oldest)
                else { return .refused }
                state.idle.remove(oldest)
                outcome = .evicting(evicted)
            }
            state.channels[id] = channel
            state.idle.append(id)
            return outcome
        }
        switch outcome {
        case .admitted: return true
        case .refused: return false
        case .evicting(let channel):
            channel.close(promise: nil)
            return true
        }
    }

    func mark(_ id: ObjectIdentifier, busy: Bool) {
        state.withLock { state in
            guard state.channels[id] != nil else { return }
            if busy { state.idle.remove(id) } else { state.idle.append(id) }
        }
    }

    func remove(_ id: ObjectIdentifier) {
        state.withLock { state in
            state.channels[id] = nil
            state.idle.remove(id)
        }
    }

    var count: Int { state.withLock { $0.channels.count } }
}

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

/// On each connection, after the HTTP decoder: admits it through the
/// registry, marks it busy from a request's head until its response ends,
/// and closes it when the request's body has not ended in time.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let registry: ConnectionRegistry
    let requestTimeout: Duration
    private var deadline: Scheduled<Void>?
    /// Whether a request's head came and its end has not.
    private var inBody = false
    private var admitted = false

    init(registry: ConnectionRegistry, requestTimeout: Duration) {
        self.registry = registry
        self.requestTimeout = requestTimeout
    }

    var id: ObjectIdentifier { ObjectIdentifier(self) }

    func handlerAdded(context: ChannelHandlerContext) {
        admitted = registry.admit(context.channel, id: id)
        if !admitted { context.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        if admitted { registry.remove(id) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        if admitted { registry.remove(id) }
        admitted = false
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            registry.mark(id, busy: true)
            deadline?.cancel()
            deadline = nil
            inBody = true
        case .end:
            deadline?.cancel()
            deadline = nil
            inBody = false
        case .body: break
        }
        context.fireChannelRead(data)
    }

    /// The body's deadline is set once a read ends inside a body: a
    /// request whose head and end came in one read (most) costs no timer.
    /// The deadline counts from that read, a few microseconds after the head.
    func channelReadComplete(context: ChannelHandlerContext) {
        if inBody && deadline == nil {
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: .init(requestTimeout)) { channel.close(promise: nil) }
        }
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { registry.mark(id, busy: false) }
        context.write(data, promise: promise)
    }
}
#endif
