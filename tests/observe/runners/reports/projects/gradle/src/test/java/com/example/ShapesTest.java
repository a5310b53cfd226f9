package com.example;

import static org.junit.Assert.assertEquals;

import org.junit.Ignore;
import org.junit.Test;

public class ShapesTest {
    @Test
    public void passes() {
        assertEquals(2, Calc.add(2, 0));
    }

    @Test
    public void fails() {
        assertEquals("2 + 3", 5, Calc.add(2, 3));
    }

    @Test
    public void errors() {
        throw new IllegalStateException("no calculator today");
    }

    @Ignore("not today")
    @Test
    public void ignored() {
    }
}
