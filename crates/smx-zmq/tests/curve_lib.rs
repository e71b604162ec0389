//! The libzmq this workspace links has CURVE (smx-libzmq), and a CURVE pair talks.

// The test binary links smx-zmq, and through it the libzmq with CURVE.
use smx_zmq as _;

#[test]
fn libzmq_has_curve() {
    assert_eq!(zmq::has("curve"), Some(true));
}

#[test]
fn a_curve_pair_exchanges_messages_and_a_keyless_peer_gets_nothing() {
    let ctx = zmq::Context::new();
    let server_keys = zmq::CurveKeyPair::new().unwrap();
    let client_keys = zmq::CurveKeyPair::new().unwrap();

    let pull = ctx.socket(zmq::PULL).unwrap();
    pull.set_curve_server(true).unwrap();
    pull.set_curve_secretkey(&server_keys.secret_key).unwrap();
    pull.bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = pull.get_last_endpoint().unwrap().unwrap();

    let plain = ctx.socket(zmq::PUSH).unwrap();
    plain.set_linger(0).unwrap();
    plain.connect(&endpoint).unwrap();
    plain.send("plain", 0).unwrap();

    let push = ctx.socket(zmq::PUSH).unwrap();
    push.set_curve_serverkey(&server_keys.public_key).unwrap();
    push.set_curve_publickey(&client_keys.public_key).unwrap();
    push.set_curve_secretkey(&client_keys.secret_key).unwrap();
    push.connect(&endpoint).unwrap();
    push.send("secret", 0).unwrap();

    assert_eq!(pull.recv_bytes(0).unwrap(), b"secret");
    pull.set_rcvtimeo(300).unwrap();
    assert!(pull.recv_bytes(0).is_err(), "the keyless peer's frame was taken");
}
