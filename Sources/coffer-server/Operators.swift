#if Server
import ArgumentParser
import CofferKeyServerCore
import Foundation

/// `coffer-server operator`: operator tokens, made, listed and removed.
struct Operator: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Makes, lists and removes operator tokens.", subcommands: [Add.self, List.self, Remove.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Makes an operator token and prints it (the only time it is shown).")
        @OptionGroup var data: DataOptions
        @Option(help: "The operator's name (unique).") var name: String
        @Option(
            name: .customLong("scope"),
            help: ArgumentHelp(
                "keys:rotate, keys:retire, subjects:shred, metrics:read, stores:anchor, keys:read or keys:release; repeat for several (default: all but keys:release, the one that returns keys).",
                valueName: "SCOPE"))
        var scopes: [String] = []
        @Option(
            help: ArgumentHelp(
                "The realm whose servers accept the token (default: the configuration's realm, else default).",
                valueName: "NAME"))
        var realm: String?
        @Option(
            help: ArgumentHelp(
                "No server accepts the token after this long: seconds, or Nm, Nh, Nd (60 s to 10 years; default: never).",
                valueName: "DURATION"))
        var expiresIn: String?

        func validate() throws {
            if let expiresIn, Self.seconds(expiresIn) == nil {
                throw ValidationError("--expires-in is seconds, or a number with m, h or d (90d), not \(expiresIn)")
            }
        }

        /// "3600", "30m", "12h", "90d" in seconds.
        static func seconds(_ text: String) -> Int64? {
            let units: [Character: Int64] = ["m": 60, "h": 3600, "d": 86400]
            if let unit = text.last.flatMap({ units[$0] }) {
                return Int64(text.dropLast()).flatMap {
                    $0.multipliedReportingOverflow(by: unit).overflow ? nil : $0 * unit
                }
            }
            return Int64(text)
        }

        func run() async throws {
            let scopes = self.scopes.isEmpty ? OperatorScope.all : self.scopes.map(OperatorScope.init)
            let settings = try await data.settings()
            print(
                try await data.open(settings).addOperator(
                    name: name, scopes: scopes, realm: settings.value(realm, "realm") ?? "default",
                    expiresIn: expiresIn.flatMap(Self.seconds)))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Lists operators: name, realm, scopes and expiry (never tokens).")
        @OptionGroup var data: DataOptions

        func run() async throws {
            let now = Int64(Date().timeIntervalSince1970)
            for info in try await data.open(try await data.settings()).operators() {
                let realm = info.realm ?? "(none: made before realms; add it again)"
                let expires = info.expires.map {
                    (info.expired(at: now) ? "expired " : "expires ") + ServerKeyStore.timestamp($0)
                }
                print(
                    "\(info.name)\t\(realm)\t\(info.scopes.map(\.name).joined(separator: " "))\t\(expires ?? "never expires")"
                )
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Removes an operator; its token stops working.")
        @OptionGroup var data: DataOptions
        @Option(help: "The operator's name.") var name: String

        func run() async throws {
            guard try await data.open(try await data.settings()).removeOperator(name: name) else {
                throw ValidationError("there is no operator named \(name)")
            }
        }
    }
}
#endif
