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

/// Every open connection, whether it is between requests and since when:
/// who to close when a new one comes past the maximum.
final class ConnectionRegistry: Sendable {
    struct Entry {
        let channel: any Channel
        var busy: Bool
        var since: ContinuousClock.Instant
    }

    let maximum: Int
    private let entries = Locked([ObjectIdentifier: Entry]())

    init(maximum: Int) { self.maximum = maximum }

    /// Registers `channel`; past the maximum, closes the connection idle
    /// the longest, or, when every one is in a request, refuses this one
    /// (false).
    func admit(_ channel: any Channel, id: ObjectIdentifier) -> Bool {
        enum Outcome {
            case admitted, refused
            case evicting(any Channel)
        }
        let outcome = entries.withLock { entries -> Outcome in
            var outcome = Outcome.admitted
            if entries.count >= maximum {
                guard let oldest = entries.filter({ !$0.value.busy }).min(by: { $0.value.since < $1.value.since })
                else { return .refused }
                entries[oldest.key] = nil
                outcome = .evicting(oldest.value.channel)
            }
            entries[id] = Entry(channel: channel, busy: false, since: .now)
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
        entries.withLock { entries in
            entries[id]?.busy = busy
            entries[id]?.since = .now
        }
    }

    func remove(_ id: ObjectIdentifier) { entries.withLock { $0[id] = nil } }

    var count: Int { entries.withLock { $0.count } }
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
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: .init(requestTimeout)) { channel.close(promise: nil) }
        case .end:
            deadline?.cancel()
            deadline = nil
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { registry.mark(id, busy: false) }
        context.write(data, promise: promise)
    }
}
