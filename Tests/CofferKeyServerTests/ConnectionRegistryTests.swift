#if Server
import NIOCore
import NIOEmbedded
import Testing

@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// Past the connection limit the registry closes the connection idle the
/// longest, found in O(1), and refuses a new one only when all are busy.
@Suite struct ConnectionRegistryTests {
    final class Token {}

    @Test func theOrderMatchesAPlainListUnderRandomOperations() {
        let tokens = (0..<12).map { _ in Token() }
        let ids = tokens.map(ObjectIdentifier.init)
        var order = IdleOrder()
        var model: [ObjectIdentifier] = []
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let id = ids[Int.random(in: 0..<ids.count, using: &generator)]
            if Bool.random(using: &generator) {
                order.append(id)
                model.removeAll { $0 == id }
                model.append(id)
            } else {
                order.remove(id)
                model.removeAll { $0 == id }
            }
            #expect(order.first == model.first)
            #expect(order.count == model.count)
        }
        #expect(order.ordered == model)
    }

    static func connected() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        return channel
    }

    @Test func theLongestIdleIsClosedAndBusyOnesAreKept() throws {
        let registry = ConnectionRegistry(maximum: 3)
        let channels = try (0..<5).map { _ in try Self.connected() }
        let ids = channels.map { ObjectIdentifier($0) }
        for index in 0..<3 { #expect(registry.admit(channels[index], id: ids[index])) }
        // 0 is in a request; 1 finished one after 2 became idle.
        registry.mark(ids[0], busy: true)
        registry.mark(ids[1], busy: true)
        registry.mark(ids[1], busy: false)
        #expect(registry.admit(channels[3], id: ids[3]))
        #expect(!channels[2].isActive && channels[0].isActive && channels[1].isActive)
        #expect(registry.count == 3)
        // 1 goes next; then all three left are busy, and a newcomer is refused.
        #expect(registry.admit(channels[4], id: ids[4]))
        #expect(!channels[1].isActive)
        registry.mark(ids[3], busy: true)
        registry.mark(ids[4], busy: true)
        let late = try Self.connected()
        #expect(!registry.admit(late, id: ObjectIdentifier(late)))
        #expect(registry.count == 3)
        registry.remove(ids[0])
        #expect(registry.admit(late, id: ObjectIdentifier(late)))
    }
}
#endif
