//! Check 4: fencing tokens must increase in grant order, for families that promise it.

use lockstep_check::{Options, TokenInversion, Validity};

use crate::support::{C1, C2, C3, grant, history, ms, verdict, verdict_with};

fn monotonic() -> Options {
    Options {
        tokens_monotonic: true,
        ..Options::default()
    }
}

#[test]
fn token_below_an_earlier_grants_token_is_flagged_only_when_tokens_are_monotonic() {
    let history = history()
        .grant_token(0, C1, 1, 34)
        .release(10, C1, 1)
        .grant_token(20, C2, 1, 33)
        .release(30, C2, 1)
        .end(40);
    let judged = verdict_with(&history, &monotonic());
    let expected = TokenInversion {
        earlier: grant(C1, 1),
        earlier_token: 34,
        later: grant(C2, 1),
        later_token: 33,
        time_ns: ms(20),
    };
    assert_eq!(judged.token_order.count, 1);
    assert_eq!(judged.token_order.examples, vec![expected]);
    assert_eq!(judged.resource, Validity::Invalid);

    let unchecked = verdict(&history);
    assert_eq!(unchecked.token_order.count, 0);
    assert_eq!(unchecked.resource, Validity::Valid);
}

#[test]
fn equal_tokens_are_an_inversion() {
    let history = history()
        .grant_token(0, C1, 1, 7)
        .release(1, C1, 1)
        .grant_token(2, C2, 1, 7)
        .end(3);
    assert_eq!(verdict_with(&history, &monotonic()).token_order.count, 1);
}

#[test]
fn a_client_reentering_with_its_own_token_is_not_an_inversion_but_another_client_is() {
    // client-1's unlock failed, its key survived, and it locked again on the same session:
    // the same token, the same ownership.
    let reentry = history()
        .grant_token(0, C1, 1, 7)
        .release(1, C1, 1)
        .grant_token(2, C1, 2, 7)
        .release(3, C1, 2)
        .grant_token(4, C2, 1, 9)
        .end(5);
    assert_eq!(verdict_with(&reentry, &monotonic()).token_order.count, 0);
    // Someone else's grant in between: the old token again is an inversion.
    let between = history()
        .grant_token(0, C1, 1, 7)
        .release(1, C1, 1)
        .grant_token(2, C2, 1, 8)
        .release(3, C2, 1)
        .grant_token(4, C1, 2, 7)
        .end(5);
    assert_eq!(verdict_with(&between, &monotonic()).token_order.count, 1);
    // Its own earlier token below the highest: an inversion too.
    let below = history()
        .grant_token(0, C2, 1, 9)
        .grant_token(1, C1, 1, 7)
        .grant_token(2, C1, 2, 7)
        .end(3);
    assert_eq!(verdict_with(&below, &monotonic()).token_order.count, 2);
}

#[test]
fn inversions_name_the_grant_holding_the_highest_earlier_token() {
    let history = history()
        .grant_token(0, C1, 1, 10)
        .grant_token(1, C2, 1, 30)
        .grant_token(2, C3, 1, 20)
        .grant_token(3, C1, 2, 25)
        .grant_token(4, C2, 2, 31)
        .end(5);
    let found = verdict_with(&history, &monotonic()).token_order;
    assert_eq!(found.count, 2);
    let pairs: Vec<_> = found
        .examples
        .iter()
        .map(|found| (found.earlier, found.later))
        .collect();
    assert_eq!(
        pairs,
        vec![(grant(C2, 1), grant(C3, 1)), (grant(C2, 1), grant(C1, 2))]
    );
}

#[test]
fn grants_without_a_token_are_skipped() {
    let history = history()
        .grant_token(0, C1, 1, 10)
        .grant(1, C2, 1)
        .grant_token(2, C3, 1, 11)
        .end(3);
    assert_eq!(verdict_with(&history, &monotonic()).token_order.count, 0);
}

#[test]
fn token_order_follows_the_service_not_the_replies() {
    // Revision 7 was issued before revision 9; client-1 learned of its grant last. In the
    // service's order the tokens rise.
    let crossed = history()
        .issued(0, C1, 7)
        .issued(2, C2, 9)
        .grant_token(3, C2, 1, 9)
        .ticket(9)
        .grant_token(4, C1, 1, 7)
        .ticket(7)
        .end(5);
    assert_eq!(verdict_with(&crossed, &monotonic()).token_order.count, 0);

    // A service that issued the higher token first is inverted, whatever the replies did.
    let inverted = history()
        .issued(0, C1, 9)
        .issued(2, C2, 7)
        .grant_token(3, C1, 1, 9)
        .ticket(9)
        .grant_token(4, C2, 1, 7)
        .ticket(7)
        .end(5);
    assert_eq!(verdict_with(&inverted, &monotonic()).token_order.count, 1);
}
