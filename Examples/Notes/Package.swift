// swift-tools-version: 6.1
// The app developer trial's private-notes model (reviews: app developer
// trial 4), on the app libraries only: a clear title, a sealed body, a
// sealed and indexed tag, a date. Its tests are the trial's asks, each a
// test: a password changed, a recovery key, the server's rotation
// followed, a commit by another process observed, queries beyond
// equality, a type that drifted from its store refused.
import PackageDescription

let package = Package(
    name: "Notes",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [.library(name: "NotesModel", targets: ["NotesModel"])],
    dependencies: [.package(name: "Coffer", path: "../..")],
    targets: [
        .target(
            name: "NotesModel",
            dependencies: [
                .product(name: "Coffer", package: "Coffer"), .product(name: "CofferStore", package: "Coffer"),
                .product(name: "CofferKeyClient", package: "Coffer"),
            ]
        ),
        .testTarget(
            name: "NotesModelTests",
            dependencies: [
                "NotesModel", .product(name: "Coffer", package: "Coffer"),
                .product(name: "CofferStore", package: "Coffer"), .product(name: "CofferKeyClient", package: "Coffer"),
            ]
        ),
    ]
)

for target in package.targets {
    target.swiftSettings = [.swiftLanguageMode(.v6), .enableUpcomingFeature("ExistentialAny")]
}
