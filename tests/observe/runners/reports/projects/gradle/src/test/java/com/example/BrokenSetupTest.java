package com.example;

import org.junit.BeforeClass;
import org.junit.Test;

public class BrokenSetupTest {
    @BeforeClass
    public static void setUp() {
        throw new IllegalStateException("no database");
    }

    @Test
    public void neverRuns() {
    }
}
