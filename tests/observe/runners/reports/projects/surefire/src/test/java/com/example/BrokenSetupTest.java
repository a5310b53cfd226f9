package com.example;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class BrokenSetupTest {
    @BeforeAll
    static void setUp() {
        throw new IllegalStateException("no database");
    }

    @Test
    void neverRuns() {
    }
}
