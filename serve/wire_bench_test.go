package serve

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gpipe/gpipe/ingest/edges"
)

// BenchmarkSendWire is BenchmarkSendResult through gRPC's transport on
// loopback: the K22-shaped BFS result (2,395,814 rows, 48.5 MB) sent by the
// server's sendResult on a real stream, with the server's transport options
// and codec, to a client that takes each message's bytes without decoding
// them. It measures the server's whole write path (encoders, codec, gRPC's
// framing and buffers, the system calls) with as little client as gRPC
// allows; client and server share the process.
func BenchmarkSendWire(b *testing.B) {
	w := startSendWire(b)
	conn := w.dial(b)
	defer conn.Close()
	b.SetBytes(w.recv(b, conn))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.recv(b, conn)
	}
}

// BenchmarkSendWireClients is BenchmarkSendWire from 16 clients at once,
// each on a connection of its own (as issue 17's 16 client processes):
// what the server's sending costs when it shares the cores.
func BenchmarkSendWireClients(b *testing.B) {
	w := startSendWire(b)
	const clients = 16
	conns := make(chan *grpc.ClientConn, clients)
	for i := 0; i < clients; i++ {
		conn := w.dial(b)
		defer conn.Close()
		conns <- conn
	}
	conn := <-conns
	b.SetBytes(w.recv(b, conn))
	conns <- conn
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		conn := <-conns
		defer func() { conns <- conn }()
		for pb.Next() {
			w.recv(b, conn)
		}
	})
}

// sendWire is a server whose one streaming method sends the K22-shaped
// BFS result (bfsK22) with sendResult.
type sendWire struct {
	addr string
	desc grpc.ServiceDesc
}

func startSendWire(b *testing.B) *sendWire {
	res := bfsK22()
	var svc *service
	w := &sendWire{desc: grpc.ServiceDesc{
		ServiceName: "gpipe.bench.Wire",
		HandlerType: (*any)(nil),
		Streams: []grpc.StreamDesc{{
			StreamName:    "Send",
			ServerStreams: true,
			Handler: func(_ any, stream grpc.ServerStream) error {
				var req flight.Ticket // the client sends an empty message
				if err := stream.RecvMsg(&req); err != nil {
					return err
				}
				return svc.sendResult(stream.Context(), stream, res, 0, resultMeta{})
			},
		}},
	}}
	ts := startServerWith(b, Config{}, func(s *Server) { svc = s.svc; s.grpc.RegisterService(&w.desc, nil) })
	w.addr = ts.addr
	return w
}

// dial connects a client that takes messages as bytes, with the server's
// buffer and window sizes.
func (w *sendWire) dial(b *testing.B) *grpc.ClientConn {
	conn, err := grpc.NewClient(w.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}), grpc.MaxCallRecvMsgSize(64<<20)),
		grpc.WithInitialWindowSize(windowBytes), grpc.WithInitialConnWindowSize(windowBytes),
		grpc.WithReadBufferSize(connBufferBytes), grpc.WithWriteBufferSize(connBufferBytes))
	if err != nil {
		b.Fatal(err)
	}
	return conn
}

// recv asks for the result and takes it; it returns the bytes received
// (0 after an error, which it reports: it may run on RunParallel's
// goroutines, where b.Fatal may not).
func (w *sendWire) recv(b *testing.B, conn *grpc.ClientConn) int64 {
	st, err := conn.NewStream(context.Background(), &w.desc.Streams[0], "/gpipe.bench.Wire/Send")
	if err == nil {
		err = st.SendMsg(rawMessage{})
	}
	if err == nil {
		err = st.CloseSend()
	}
	var n int64
	for err == nil {
		var m rawMessage
		if err = st.RecvMsg(&m); err == io.EOF {
			return n
		}
		n += int64(len(m))
	}
	b.Error(err)
	return 0
}

// BenchmarkReceiveWire is BenchmarkReceive through gRPC's transport on
// loopback: a client sends the marshaled FlightData messages of 8 M edges
// (batches of 1 M rows, 128 MB) on a real stream, and the server reads them
// into an edge table with the server's transport options and codec
// (service.receive, as a DoPut does before the build).
func BenchmarkReceiveWire(b *testing.B) {
	msgs := upload8M()
	var size int64
	for _, m := range msgs {
		size += int64(len(m))
	}
	var svc *service
	desc := grpc.ServiceDesc{
		ServiceName: "gpipe.bench.Wire",
		HandlerType: (*any)(nil),
		Streams: []grpc.StreamDesc{{
			StreamName:    "Receive",
			ClientStreams: true,
			Handler: func(_ any, stream grpc.ServerStream) error {
				up, err := svc.openUpload(recvStream{stream}, "the upload")
				if err != nil {
					return err
				}
				defer up.release()
				t, held, err := svc.receive(stream.Context(), up, "graph g", edges.Options{})
				if err != nil {
					return err
				}
				rows := t.RowsRead
				t.Release()
				svc.mem.release(held)
				if rows != 8<<20 {
					return fmt.Errorf("%d rows", rows)
				}
				return stream.SendMsg(&flight.PutResult{})
			},
		}},
	}
	ts := startServerWith(b, Config{}, func(s *Server) { svc = s.svc; s.grpc.RegisterService(&desc, nil) })
	conn, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}), grpc.MaxCallSendMsgSize(64<<20)),
		grpc.WithReadBufferSize(connBufferBytes), grpc.WithWriteBufferSize(connBufferBytes))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := conn.NewStream(context.Background(), &desc.Streams[0], "/gpipe.bench.Wire/Receive")
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range msgs {
			if err := st.SendMsg(rawMessage(m)); err != nil {
				b.Fatal(err)
			}
		}
		if err := st.CloseSend(); err != nil {
			b.Fatal(err)
		}
		var res rawMessage
		if err := st.RecvMsg(&res); err != nil {
			b.Fatal(err)
		}
	}
}

// recvStream reads FlightData from a server stream (a DoPut's, in effect).
type recvStream struct{ grpc.ServerStream }

func (r recvStream) Recv() (*flight.FlightData, error) {
	fd := &flight.FlightData{}
	if err := r.RecvMsg(fd); err != nil {
		return nil, err
	}
	return fd, nil
}

// rawMessage is a message's bytes, as rawCodec passes them.
type rawMessage []byte

// rawCodec passes messages' bytes through (the client of BenchmarkSendWire).
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) { return v.(rawMessage), nil }

func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*rawMessage)) = data
	return nil
}
