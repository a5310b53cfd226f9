package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ShapesTest {
    @Test
    void passes() {
        assertEquals(2, Calc.add(2, 0));
    }

    @Test
    void fails() {
        assertEquals(5, Calc.add(2, 3), "2 + 3");
    }

    @Test
    void errors() {
        throw new IllegalStateException("no calculator today");
    }

    @Disabled("not today")
    @Test
    void disabled() {
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1})
    void parameterized(int value) {
        assertEquals(value, Calc.add(value, 0));
    }

    @Nested
    class Inner {
        @Test
        void nestedFails() {
            assertEquals(4, Calc.add(2, 2));
        }
    }
}
