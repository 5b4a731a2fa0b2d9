#if Server
import Coffer
import CofferKeyServerCore
import Foundation
import NIOCore

/// The load balancers and proxies whose word about the client is taken:
/// only a request whose peer is one of them has its client address read
/// from `X-Forwarded-For` or `Forwarded`, and only their connections are
/// exempt from the per-address connection cap (security review 4, H3).
/// Anyone else could name any address there, so nothing else is believed.
public struct TrustedProxies: Sendable, Hashable {
    struct Network: Sendable, Hashable {
        let bytes: [UInt8]
        let prefix: Int
    }

    var networks: [Network] = []

    /// None: every client is its connection's peer.
    public init() {}

    /// Networks as `ADDRESS/PREFIX` or single addresses (`10.0.0.0/8`,
    /// `192.0.2.10`, `2001:db8::/32`); anything else is `invalidArgument`.
    public init(_ networks: [String]) throws {
        for text in networks {
            let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let bytes = Self.bytes(String(parts[0])) else {
                throw CofferError(.invalidArgument, "a trusted proxy is an IP address or ADDRESS/PREFIX, not \(text)")
            }
            let prefix = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
            guard let prefix, (0...bytes.count * 8).contains(prefix) else {
                throw CofferError(
                    .invalidArgument, "the prefix of \(text) is 0 to \(bytes.count * 8) for that address")
            }
            self.networks.append(Network(bytes: bytes, prefix: prefix))
        }
    }

    public var isEmpty: Bool { networks.isEmpty }

    /// Whether `address` is in one of the networks.
    public func contains(_ address: SocketAddress?) -> Bool {
        guard !networks.isEmpty, let address, let bytes = Self.bytes(address) else { return false }
        return contains(bytes)
    }

    func contains(_ bytes: [UInt8]) -> Bool {
        networks.contains { network in
            guard network.bytes.count == bytes.count else { return false }
            var left = network.prefix
            for (a, b) in zip(network.bytes, bytes) where left > 0 {
                let mask: UInt8 = left >= 8 ? 0xff : ~(0xff >> UInt8(left))
                if a & mask != b & mask { return false }
                left -= 8
            }
            return true
        }
    }

    /// The client a trusted proxy names: in `X-Forwarded-For` (or the
    /// `for=` of `Forwarded`), read from the right, the first address that
    /// is not itself a trusted proxy; nil when none parses.
    func forwardedClient(xForwardedFor: String?, forwarded: String?) -> SocketAddress? {
        var hops: [String] = []
        if let xForwardedFor {
            hops = xForwardedFor.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        } else if let forwarded {
            for element in forwarded.split(separator: ",") {
                for pair in element.split(separator: ";") {
                    let parts = pair.split(separator: "=", maxSplits: 1).map {
                        $0.trimmingCharacters(in: .whitespaces)
                    }
                    guard parts.count == 2, parts[0].lowercased() == "for" else { continue }
                    var value = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                    if value.hasPrefix("["), let close = value.firstIndex(of: "]") {
                        value = String(value[value.index(after: value.startIndex)..<close])
                    } else if value.filter({ $0 == ":" }).count == 1 {
                        value = String(value.prefix { $0 != ":" })
                    }
                    hops.append(value)
                }
            }
        }
        var client: SocketAddress?
        for hop in hops.reversed() {
            guard let address = try? SocketAddress(ipAddress: hop, port: 0) else { return client }
            client = address
            guard let bytes = Self.bytes(address), contains(bytes) else { return address }
        }
        return client
    }

    static func bytes(_ text: String) -> [UInt8]? {
        guard let address = try? SocketAddress(ipAddress: text, port: 0) else { return nil }
        return bytes(address)
    }

    /// 4 bytes for IPv4 (also mapped into IPv6), 16 for IPv6.
    static func bytes(_ address: SocketAddress) -> [UInt8]? {
        switch address {
        case .v4(let v4): return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
                return Array(bytes[12...])
            }
            return bytes
        case .unixDomainSocket: return nil
        }
    }
}
#endif
