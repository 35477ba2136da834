package serve

import (
	"context"
	"io"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/flight"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// BenchmarkSendWire is BenchmarkSendResult through gRPC's transport on
// loopback: the K22-shaped BFS result (2,395,814 rows, 48.5 MB) sent by the
// server's sendResult on a real stream, with the server's transport options
// and codec, to a client that takes each message's bytes without decoding
// them. It measures the server's whole write path (encoders, codec, gRPC's
// framing and buffers, the system calls) with as little client as gRPC
// allows; client and server share the process.
func BenchmarkSendWire(b *testing.B) {
	res := bfsK22()
	var svc *service
	desc := grpc.ServiceDesc{
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
	}
	ts := startServerWith(b, Config{}, func(s *Server) { svc = s.svc; s.grpc.RegisterService(&desc, nil) })
	conn, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}), grpc.MaxCallRecvMsgSize(64<<20)),
		grpc.WithInitialWindowSize(windowBytes), grpc.WithInitialConnWindowSize(windowBytes),
		grpc.WithReadBufferSize(connBufferBytes), grpc.WithWriteBufferSize(connBufferBytes))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	recv := func() int64 {
		ctx := context.Background()
		st, err := conn.NewStream(ctx, &desc.Streams[0], "/gpipe.bench.Wire/Send")
		if err != nil {
			b.Fatal(err)
		}
		if err := st.SendMsg(rawMessage{}); err != nil {
			b.Fatal(err)
		}
		if err := st.CloseSend(); err != nil {
			b.Fatal(err)
		}
		var n int64
		for {
			var m rawMessage
			if err := st.RecvMsg(&m); err == io.EOF {
				return n
			} else if err != nil {
				b.Fatal(err)
			}
			n += int64(len(m))
		}
	}
	b.SetBytes(recv())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		recv()
	}
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
