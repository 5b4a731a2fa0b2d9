// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Coffer",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "Coffer", targets: ["Coffer"]),
        .library(name: "CofferCompat", targets: ["CofferCompat"]),
        .library(name: "CofferKeychain", targets: ["CofferKeychain"]),
        .library(name: "CofferTesting", targets: ["CofferTesting"]),
        .library(name: "CofferStore", targets: ["CofferStore"]),
        .library(name: "CofferStorePostgres", targets: ["CofferStorePostgres"]),
        .library(name: "CofferKeyServerCore", targets: ["CofferKeyServerCore"]),
        .library(name: "CofferKeyServer", targets: ["CofferKeyServer"]),
        .library(name: "CofferKeyClient", targets: ["CofferKeyClient"]),
        .library(name: "CofferKeyClientNIO", targets: ["CofferKeyClientNIO"]),
        .library(name: "CofferPKCS11", targets: ["CofferPKCS11"]),
        // coffer and coffer-server are not products: the root package builds
        // and runs them (`swift run coffer`), and as products their
        // dependencies would be resolved by every app that depends on Coffer.
    ],
    traits: [
        .trait(
            name: "Server",
            description:
                "The server side: CofferStorePostgres, CofferKeyServer, CofferKeyClientNIO, coffer-server and coffer's PostgreSQL stores (SwiftNIO, Hummingbird, postgres-nio, AsyncHTTPClient)"
        ),
        .trait(
            name: "SecretService",
            description: "SecretServiceKeychain: GNOME Keyring and KWallet through libsecret (needs libsecret-1-dev)"
        ),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        // DER (already in the graph through swift-crypto's CryptoExtras).
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        // `swift package generate-documentation` (a plugin; apps never build it).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
        // CofferStore's embedded backend (SQLite through the system's libsqlite3).
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        // CofferStore's server backend.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // The key server (docs/key-server.md): HTTP, and the sign-in tokens it trusts.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.30.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.2"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        // The key server's /metrics.
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        // Traces: the key server's spans and the client's `traceparent`
        // (Instrumentation, small, also for apps), exported over OTLP/HTTP
        // only (no gRPC in the graph).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // prctl and setrlimit, which Swift cannot call directly (variadic).
        .target(name: "CCofferSystem"),
        .target(
            name: "Coffer",
            dependencies: [
                "CCofferSystem",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // Reading and migrating what iOS apps already stored: SecKey,
        // RNCryptor v3, the CommonCrypto recipe, CryptoKit sealed boxes.
        .target(
            name: "CofferCompat",
            dependencies: [
                "Coffer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // Apple's keychain model everywhere: in memory, a crash-safe
        // encrypted file on Linux, the Secret Service (trait), Apple's own.
        .target(
            name: "CofferKeychain",
            dependencies: [
                "Coffer",
                .target(name: "CLibSecret", condition: .when(platforms: [.linux], traits: ["SecretService"])),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .target(name: "CofferTesting", dependencies: ["Coffer", "CofferKeychain"]),
        // Key slots sealed inside an HSM: a PKCS#11 module loaded with dlopen
        // (CCofferPKCS11 declares the few Cryptoki types it calls).
        .target(name: "CCofferPKCS11"),
        .target(
            name: "CofferPKCS11",
            dependencies: ["Coffer", "CCofferPKCS11", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Records whose private fields are sealed and whose other fields
        // stay clear and searchable (docs/store.md).
        .target(
            name: "CofferStore",
            dependencies: [
                "Coffer",
                // The keychain that keeps a store's rollback mark by default
                // on Apple platforms (RecordStore+Platform.swift), and its
                // anchor anywhere (KeychainStoreAnchor).
                "CofferKeychain",
                // A key server as a store's anchor (KeyServerStoreAnchor).
                "CofferKeyClient",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for binding an INSERT's values straight
                // to GRDB's prepared statement (StoreConnection.swift).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        // The same store on PostgreSQL, apart so that apps on devices never
        // link SwiftNIO (docs/store.md).
        .target(
            name: "CofferStorePostgres",
            dependencies: [
                "Coffer", "CofferStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .executableTarget(
            name: "coffer",
            dependencies: [
                "Coffer", "CofferCompat", "CofferKeychain", "CofferStore", "CofferStorePostgres", "CofferKeyClient",
                // --kek-pkcs11-module: a KEK held in an HSM
                "CofferPKCS11",
                // --ca-file: a key server whose CA is private (ServerTrust.swift).
                "CofferKeyClientNIO",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Keys from a server after sign-in: keys as wrapped rows, tokens
        // checked against the issuer's keys, the HTTP API (docs/key-server.md).
        // Its core: keys as wrapped rows, the audit log, rate counts and
        // operators over SQLite or PostgreSQL, with no HTTP in it; what
        // `coffer-server kek`, `operator` and `audit` need. This list is
        // what keeps HTTP out: no Hummingbird, no HTTPTypes.
        .target(
            name: "CofferKeyServerCore",
            dependencies: [
                "Coffer", "CofferStore", "CofferStorePostgres",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // Spans for the release batch and its transaction.
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The HTTP API over the core: configuration, authenticators,
        // controllers, middleware, `buildApplication`.
        .target(
            name: "CofferKeyServer",
            dependencies: [
                "Coffer", "CofferKeyServerCore", "CofferStorePostgres",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The app's side: the signed-in user's keys, cached in a keychain.
        .target(
            name: "CofferKeyClient",
            dependencies: [
                "Coffer", "CofferKeychain", .product(name: "Crypto", package: "swift-crypto"),
                // The app's trace context as a `traceparent` header.
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ]
        ),
        // The key client over AsyncHTTPClient, for servers (apps use URLSession).
        .target(
            name: "CofferKeyClientNIO",
            dependencies: [
                "CofferKeyClient",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .executableTarget(
            name: "coffer-server",
            dependencies: [
                "Coffer", "CofferKeyServer", "CofferKeyServerCore", "CofferKeychain", "CofferPKCS11",
                // RecordJSON's string quoting, for --log-format json.
                "CofferStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                // --otel-endpoint: spans over OTLP/HTTP.
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .executableTarget(
            name: "coffer-fuzz",
            dependencies: [
                "Coffer", "CofferCompat", "CofferKeychain", "CofferStore", "CofferKeyClient", "CofferKeyServer",
                "CofferKeyServerCore", .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // libsecret, only with the SecretService trait.
        .systemLibrary(
            name: "CLibSecret",
            pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev"])]
        ),
        // zlib, only to inflate the compressed CCTV vectors in tests.
        .systemLibrary(
            name: "CZlib",
            path: "Tests/CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),
        .testTarget(
            name: "CofferTests",
            dependencies: [
                "Coffer", "CofferTesting", "CZlib",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            resources: [.copy("Resources")]
        ),
        .testTarget(
            name: "CofferCompatTests",
            dependencies: [
                "Coffer", "CofferCompat", "CofferKeychain",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            resources: [.copy("Resources")]
        ),
        .testTarget(
            name: "CofferCLITests",
            dependencies: ["Coffer", "CofferTesting", .product(name: "Crypto", package: "swift-crypto")],
            // Read from the source tree by path (expected transcripts, peer scripts), not bundled.
            exclude: ["Transcripts", "Peers"]
        ),
        .testTarget(
            name: "CofferStoreTests",
            dependencies: [
                "Coffer", "CofferStore", "CofferStorePostgres", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            resources: [.copy("Resources")]
        ),
        .testTarget(
            name: "CofferKeyServerTests",
            dependencies: [
                "Coffer", "CofferKeyServer", "CofferKeyServerCore", "CofferKeyClient", "CofferKeyClientNIO",
                "CofferKeychain", "CofferPKCS11",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            exclude: ["Peers"]
        ),
        .testTarget(
            name: "CofferKeychainTests",
            dependencies: [
                "Coffer", "CofferKeychain", "CofferTesting", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
    ]
)

// The server side comes only with the Server trait: every product of these
// packages is a dependency under that trait, so an app that depends on Coffer
// without naming it resolves and links none of them (docs/packages.md).
let serverPackages: Set<String> = [
    "postgres-nio", "swift-nio", "swift-nio-extras", "swift-nio-ssl", "swift-log", "swift-service-lifecycle",
    "hummingbird", "hummingbird-auth", "jwt-kit", "swift-http-types", "async-http-client", "swift-configuration",
    "swift-system", "swift-prometheus", "swift-metrics", "swift-otel",
]
for target in package.targets {
    target.dependencies = target.dependencies.map { dependency in
        guard case .productItem(let name, let package?, let aliases, nil) = dependency, serverPackages.contains(package)
        else { return dependency }
        return .product(name: name, package: package, moduleAliases: aliases, condition: .when(traits: ["Server"]))
    }
}

// Strict settings for every target, in one place.
for target in package.targets where target.type != .system {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .swiftLanguageMode(.v6),
            .enableUpcomingFeature("ExistentialAny"),
            .enableUpcomingFeature("MemberImportVisibility"),
        ]
}

// scripts/test-tsan builds the package with ThreadSanitizer for every suite
// but the CLI's, which spawn the tool once per case and run in the plain
// build. With COFFER_WITHOUT_CLI_SUITES set, those suites and the fuzzer are
// left out of the package, so that build does not compile them.
// coffer-server is left out too: swift-otel 1.6.0 does not compile with
// ThreadSanitizer on (Swift 6.3.1 reports "sending 'logger' risks causing
// data races" in its batch processors only under -sanitize=thread), so
// the suites' spawned servers are the plain build's (ServerProcess.binary)
// while every library they run in-process is checked.
if Context.environment["COFFER_WITHOUT_CLI_SUITES"] != nil {
    package.targets.removeAll { ["CofferCLITests", "coffer-fuzz", "coffer-server"].contains($0.name) }
}
// In CI each suite runs once: the CLI's in the plain build, every other
// under ThreadSanitizer. With COFFER_ONLY_CLI_SUITES set (scripts/test, in
// CI), the plain build leaves the other suites out, so that it does not
// compile them too (about three minutes on two cores).
if Context.environment["COFFER_ONLY_CLI_SUITES"] != nil {
    package.targets.removeAll { $0.type == .test && $0.name != "CofferCLITests" }
}
