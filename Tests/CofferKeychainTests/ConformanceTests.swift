import CofferKeychain
import CofferTesting
import Foundation
import Testing

@Suite struct ConformanceTests {
    @Test func inMemory() throws {
        try KeychainConformance.run { InMemoryKeychain() }
    }
}
