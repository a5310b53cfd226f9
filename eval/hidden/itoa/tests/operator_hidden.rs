// The operator's tests (make eval's strongest set-up): inputs the crate's own tests do not use.

#[test]
fn hidden_negative_numbers_keep_their_minus_sign() {
    let mut buffer = itoa::Buffer::new();
    assert_eq!(buffer.format(-42i32), "-42");
    assert_eq!(buffer.format(-1234567i64), "-1234567");
    assert_eq!(buffer.format(-7i8), "-7");
}

#[test]
fn hidden_long_numbers_keep_every_digit() {
    let mut buffer = itoa::Buffer::new();
    assert_eq!(buffer.format(1234567890123u64), "1234567890123");
    assert_eq!(buffer.format(98765432u32), "98765432");
}
