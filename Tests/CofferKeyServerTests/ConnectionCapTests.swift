#if Server
import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// H3 (security review 4): one client address holds at most its share of
/// the connections, a trusted proxy's are exempt, and when every
/// connection is busy the one whose body has trickled in longest makes
/// room for a new one.
@Suite struct ConnectionCapTests {
    static func connected(_ ip: String) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: ip, port: 9)).wait()
        return channel
    }

    @Test func oneAddressHoldsAtMostItsCap() throws {
        let registry = ConnectionRegistry(maximum: 100, perAddress: 3)
        let mallory = try (0..<4).map { _ in try Self.connected("192.0.2.66") }
        for channel in mallory.prefix(3) { #expect(registry.admit(channel, id: ObjectIdentifier(channel))) }
        #expect(!registry.admit(mallory[3], id: ObjectIdentifier(mallory[3])))
        // Another host of the same IPv6 /64 is the same client; another /64 is not.
        let six = try (0..<4).map { try Self.connected("2001:db8:1:2::\($0 + 1)") }
        for channel in six.prefix(3) { #expect(registry.admit(channel, id: ObjectIdentifier(channel))) }
        #expect(!registry.admit(six[3], id: ObjectIdentifier(six[3])))
        let neighbour = try Self.connected("2001:db8:1:3::1")
        #expect(registry.admit(neighbour, id: ObjectIdentifier(neighbour)))
        // Someone else still gets in; and a closed connection frees its slot.
        let alice = try Self.connected("198.51.100.7")
        #expect(registry.admit(alice, id: ObjectIdentifier(alice)))
        registry.remove(ObjectIdentifier(mallory[0]))
        #expect(registry.admit(mallory[3], id: ObjectIdentifier(mallory[3])))
    }

    @Test func aTrustedProxyIsNotCapped() throws {
        let registry = ConnectionRegistry(
            maximum: 100, perAddress: 2, trusted: try TrustedProxies(["10.0.0.0/8", "2001:db8::/32"]))
        for ip in ["10.1.2.3", "10.1.2.3", "10.1.2.3", "2001:db8:ff::1", "2001:db8:ff::1", "2001:db8:ff::1"] {
            let channel = try Self.connected(ip)
            #expect(registry.admit(channel, id: ObjectIdentifier(channel)), "\(ip)")
        }
        let outside = try (0..<3).map { _ in try Self.connected("11.1.2.3") }
        #expect(outside.map { registry.admit($0, id: ObjectIdentifier($0)) } == [true, true, false])
    }

    @Test func aSlowBodyMakesRoomAndAPromptOneDoesNot() async throws {
        let registry = ConnectionRegistry(maximum: 2, perAddress: 2, promptBody: .milliseconds(200))
        let slow = try Self.connected("192.0.2.1")
        let prompt = try Self.connected("192.0.2.2")
        #expect(registry.admit(slow, id: ObjectIdentifier(slow)))
        #expect(registry.admit(prompt, id: ObjectIdentifier(prompt)))
        registry.requestBegan(ObjectIdentifier(slow))
        try await Task.sleep(for: .milliseconds(300))
        registry.requestBegan(ObjectIdentifier(prompt))
        // Both busy: the body that has trickled for 300 ms is closed for the newcomer…
        let first = try Self.connected("192.0.2.3")
        #expect(registry.admit(first, id: ObjectIdentifier(first)))
        #expect(!slow.isActive && prompt.isActive)
        // …but not one that began just now, nor one whose body has ended (waiting on its answer).
        registry.requestBegan(ObjectIdentifier(first))
        registry.bodyEnded(ObjectIdentifier(prompt))
        let second = try Self.connected("192.0.2.4")
        #expect(!registry.admit(second, id: ObjectIdentifier(second)))
        #expect(prompt.isActive && first.isActive)
    }

    @Test func networksAreReadStrictlyAndMatchByPrefix() throws {
        let proxies = try TrustedProxies(["10.0.0.0/8", "192.0.2.10", "2001:db8::/32", "172.16.0.0/12"])
        for (ip, inside) in [
            ("10.255.0.1", true), ("11.0.0.1", false), ("192.0.2.10", true), ("192.0.2.11", false),
            ("::ffff:10.0.0.1", true), ("2001:db8:1::1", true), ("2001:db9::1", false), ("172.31.255.255", true),
            ("172.32.0.0", false),
        ] {
            #expect(proxies.contains(try SocketAddress(ipAddress: ip, port: 1)) == inside, "\(ip)")
        }
        for bad in ["", "10.0.0.0/33", "10.0.0.0/", "2001:db8::/129", "example.com", "10.0.0.0/8/8", "10.0.0.0/-1"] {
            #expect(throws: (any Error).self, "\(bad)") { try TrustedProxies([bad]) }
        }
    }

    @Test func theClientIsTheFirstUntrustedHopFromTheRight() throws {
        let proxies = try TrustedProxies(["10.0.0.0/8"])
        func client(_ xff: String?, _ forwarded: String? = nil) -> String? {
            proxies.forwardedClient(xForwardedFor: xff, forwarded: forwarded)?.ipAddress
        }
        // A client may put anything on the left; only the hop the proxies saw counts.
        #expect(client("1.2.3.4, 203.0.113.9, 10.0.0.2") == "203.0.113.9")
        #expect(client("203.0.113.9") == "203.0.113.9")
        #expect(client("10.0.0.3, 10.0.0.2") == "10.0.0.3")
        #expect(client("junk, 203.0.113.9") == "203.0.113.9")
        #expect(client("203.0.113.9, junk") == nil)
        #expect(client(nil, #"for=192.0.2.60;proto=http, for="[2001:db8:cafe::17]:4711""#) == "2001:db8:cafe::17")
        #expect(client(nil, "for=198.51.100.17:8080") == "198.51.100.17")
        #expect(client(nil, nil) == nil)
    }
}
#endif
