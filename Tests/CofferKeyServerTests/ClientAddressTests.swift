#if Server
import NIOCore
import Testing

@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// The client a peer address stands for in the per-address limits
/// (security review 3, G14): an IPv6 host by its /64.
@Suite struct ClientAddressTests {
    static func limited(_ ip: String) throws -> String? {
        KeyServerContext.limitedAddress(try SocketAddress(ipAddress: ip, port: 443))
    }

    @Test func anIPv6ClientIsCountedByItsSlash64() throws {
        let host = try Self.limited("2001:db8:85a3:8d3:1319:8a2e:370:7348")
        #expect(host == "2001:db8:85a3:8d3::/64")
        // Every address the host may choose in its /64 is the same client…
        #expect(try Self.limited("2001:db8:85a3:8d3::1") == host)
        #expect(try Self.limited("2001:db8:85a3:8d3:ffff:ffff:ffff:ffff") == host)
        // …and the next /64 is another.
        #expect(try Self.limited("2001:db8:85a3:8d4::1") == "2001:db8:85a3:8d4::/64")
        #expect(try Self.limited("::1") == "0:0:0:0::/64")
    }

    @Test func anIPv4ClientIsCountedWholeAlsoWhenMappedIntoIPv6() throws {
        #expect(try Self.limited("192.0.2.7") == "192.0.2.7")
        #expect(try Self.limited("192.0.2.8") == "192.0.2.8")
        #expect(try Self.limited("::ffff:192.0.2.7") == "192.0.2.7")
    }

    @Test func aUnixSocketIsCountedByItsPath() throws {
        #expect(
            KeyServerContext.limitedAddress(try SocketAddress(unixDomainSocketPath: "/run/coffer.sock"))
                == "/run/coffer.sock")
    }
}
#endif
