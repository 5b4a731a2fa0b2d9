#if Server
import Coffer
import CofferKeyServerCore
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
/// (security review 3, G6; review 4, H3): a connection that sends nothing,
/// or sends its headers a byte at a time, is closed at `idleTimeout`; a
/// request whose body has not ended `requestTimeout` after its head is
/// closed; one client address (an IPv6 host by its /64) holds at most
/// `maximumConnectionsPerAddress` connections (a trusted proxy's are
/// exempt); and past `maximumConnections` a new connection closes the
/// longest-idle one (a connection between requests), else the one whose
/// body has been arriving longest, if for over `promptBody` — so neither
/// idle sockets nor slowly trickled bodies lock other clients out.
public struct ClientLimits: Sendable {
    /// Without a whole request part (its head, a piece of its body), or
    /// between requests on a kept-alive connection.
    public var idleTimeout: Duration
    /// From a request's head to the end of its body.
    public var requestTimeout: Duration
    public var maximumConnections: Int
    /// Connections one client address may hold at once; nil for a
    /// sixteenth of ``maximumConnections`` (at least 8).
    public var maximumConnectionsPerAddress: Int?
    /// A body that has been arriving for longer than this may be closed to
    /// make room for a new connection when every connection is busy.
    public var promptBody: Duration = .seconds(1)

    /// 30 s idle, 3 s for a request's body (the key routes' bodies are at
    /// most 16 KiB), as many connections as a quarter below the process's
    /// open-file limit allows (at most 10,000), a sixteenth of them per address.
    public init(
        idleTimeout: Duration = .seconds(30), requestTimeout: Duration = .seconds(3),
        maximumConnections: Int = ClientLimits.defaultMaximumConnections, maximumConnectionsPerAddress: Int? = nil
    ) {
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.maximumConnections = maximumConnections
        self.maximumConnectionsPerAddress = maximumConnectionsPerAddress
    }

    /// The cap per address in force.
    public var perAddress: Int { maximumConnectionsPerAddress ?? max(8, maximumConnections / 16) }

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
    public func http1(trusting proxies: TrustedProxies = TrustedProxies()) -> HTTP1Channel.Configuration {
        let registry = ConnectionRegistry(
            maximum: maximumConnections, perAddress: perAddress, promptBody: promptBody, trusted: proxies)
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
        /// Connections inside a request's body, in the order their bodies began.
        var inBody = IdleOrder()
        var bodyBegan: [ObjectIdentifier: ContinuousClock.Instant] = [:]
        /// Each connection's client address (none for a trusted proxy's), and the count per address.
        var addressOf: [ObjectIdentifier: String] = [:]
        var perAddress: [String: Int] = [:]

        mutating func forget(_ id: ObjectIdentifier) -> (any Channel)? {
            idle.remove(id)
            inBody.remove(id)
            bodyBegan[id] = nil
            if let address = addressOf.removeValue(forKey: id) {
                perAddress[address, default: 1] -= 1
                if perAddress[address] == 0 { perAddress[address] = nil }
            }
            return channels.removeValue(forKey: id)
        }
    }

    let maximum: Int
    let perAddress: Int
    let promptBody: Duration
    let trusted: TrustedProxies
    private let state = Locked(State())

    init(
        maximum: Int, perAddress: Int = .max, promptBody: Duration = .seconds(1),
        trusted: TrustedProxies = TrustedProxies()
    ) {
        self.maximum = maximum
        self.perAddress = perAddress
        self.promptBody = promptBody
        self.trusted = trusted
    }

    /// Registers `channel`: refused (false) when its address holds its cap
    /// already; past the maximum, closes the connection idle the longest,
    /// else the one whose body has been arriving longest if for over
    /// `promptBody`, else refuses this one.
    func admit(_ channel: any Channel, id: ObjectIdentifier) -> Bool {
        enum Outcome {
            case admitted, refused
            case evicting(any Channel)
        }
        let peer = channel.remoteAddress
        let address = trusted.contains(peer) ? nil : peer.flatMap(KeyServerContext.limitedAddress)
        let now = ContinuousClock.now
        let outcome = state.withLock { state -> Outcome in
            var outcome = Outcome.admitted
            if let address, state.perAddress[address, default: 0] >= perAddress { return .refused }
            if state.channels.count >= maximum {
                if let oldest = state.idle.first, let evicted = state.forget(oldest) {
                    outcome = .evicting(evicted)
                } else if let slowest = state.inBody.first, let began = state.bodyBegan[slowest],
                    now - began > promptBody, let evicted = state.forget(slowest)
                {
                    outcome = .evicting(evicted)
                } else {
                    return .refused
                }
            }
            state.channels[id] = channel
            state.idle.append(id)
            if let address {
                state.addressOf[id] = address
                state.perAddress[address, default: 0] += 1
            }
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

    /// A request's head came: the connection is busy, inside its body.
    func requestBegan(_ id: ObjectIdentifier) {
        let now = ContinuousClock.now
        state.withLock { state in
            guard state.channels[id] != nil else { return }
            state.idle.remove(id)
            state.inBody.append(id)
            state.bodyBegan[id] = now
        }
    }

    /// A request's body ended (the connection stays busy until its response ends).
    func bodyEnded(_ id: ObjectIdentifier) {
        state.withLock { state in
            state.inBody.remove(id)
            state.bodyBegan[id] = nil
        }
    }

    func remove(_ id: ObjectIdentifier) {
        _ = state.withLock { state in state.forget(id) }
    }

    var count: Int { state.withLock { $0.channels.count } }
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
            registry.requestBegan(id)
            deadline?.cancel()
            deadline = nil
            inBody = true
        case .end:
            registry.bodyEnded(id)
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
