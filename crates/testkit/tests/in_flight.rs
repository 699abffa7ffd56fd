//! What the fake server counts as a request being answered: from its arrival until
//! its last bytes start to go out, as a model server's slot is held while it
//! generates and not while the reply's tail crosses the wire.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use cairn_testkit::machines::CHAT as ROUTE;
use cairn_testkit::{FakeServer, Piece, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn send(server: &FakeServer) -> TcpStream {
    let mut socket = TcpStream::connect(server.addr()).await.unwrap();
    let request = "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}";
    socket.write_all(request.as_bytes()).await.unwrap();
    socket
}

/// Reads until `needle` has arrived (the rest stays unread).
async fn read_until(socket: &mut TcpStream, needle: &[u8]) {
    let mut seen = Vec::new();
    while memchr::memmem::find(&seen, needle).is_none() {
        let mut chunk = [0u8; 4096];
        let read = socket.read(&mut chunk).await.unwrap();
        assert!(read > 0, "the reply ended before {needle:?}");
        seen.extend_from_slice(&chunk[..read]);
    }
}

async fn until_received(server: &FakeServer, count: usize) {
    while server.requests_to(ROUTE).len() < count {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_stops_counting_once_its_last_bytes_start_to_go_out() {
    let server = FakeServer::start().await;
    // The last piece is far bigger than the socket's buffers: with its reader idle,
    // the server stays blocked writing it for as long as the test likes.
    server.push(
        ROUTE,
        Reply::sse(b"data: first\n\n".to_vec()).then(Piece::Filler(64 << 20)),
    );
    server.push(
        ROUTE,
        Reply::sse(Vec::new())
            .then(Piece::Gate("second".into()))
            .then(Piece::Bytes(b"data: second\n\n".to_vec())),
    );
    server.push(ROUTE, Reply::sse(b"data: third\n\n".to_vec()));

    let mut first = send(&server).await;
    read_until(&mut first, b"xxxx").await;
    // The second arrives while the first's tail is still being written: a server
    // whose one slot was freed when the first finished generating takes it.
    let _second = send(&server).await;
    until_received(&server, 2).await;
    assert_eq!(server.peak_in_flight(ROUTE), 1, "the tail holds no slot");

    // One held at its gate (still generating) does count beside the next.
    let _third = send(&server).await;
    until_received(&server, 3).await;
    assert_eq!(
        server.peak_in_flight(ROUTE),
        2,
        "a gated answer is in flight"
    );
    server.open_gate("second");
    drop(first);
}
