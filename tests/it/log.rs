//! Appending and reading the log.

use annals::{Direction, Position, StreamVersion};

use crate::common::{append_one, store};

#[test]
fn appended_records_read_back_forward_and_backward() {
    let (_dir, store) = store();
    for i in 0..5u8 {
        let position = append_one(&store, if i % 2 == 0 { "even" } else { "odd" }, &[i]);
        assert_eq!(position, Position(u64::from(i)));
    }
    let forward = store
        .read_all(Position(1), Direction::Forward, 100)
        .unwrap();
    assert_eq!(
        forward.iter().map(|r| r.payload[0]).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    let backward = store
        .read_all(Position(3), Direction::Backward, 100)
        .unwrap();
    assert_eq!(
        backward.iter().map(|r| r.payload[0]).collect::<Vec<_>>(),
        [3, 2, 1, 0]
    );
    let even = store
        .read_stream("even", StreamVersion(1), Direction::Forward, 100)
        .unwrap();
    assert_eq!(
        even.iter().map(|r| r.payload[0]).collect::<Vec<_>>(),
        [2, 4]
    );
    let even_back = store
        .read_stream("even", StreamVersion(9), Direction::Backward, 100)
        .unwrap();
    assert_eq!(
        even_back.iter().map(|r| r.payload[0]).collect::<Vec<_>>(),
        [4, 2, 0]
    );
    assert!(store.verify().unwrap().is_sound());
}
