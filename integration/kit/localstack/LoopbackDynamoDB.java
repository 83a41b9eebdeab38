// LoopbackDynamoDB starts DynamoDB Local bound to 127.0.0.1 only.
//
// DynamoDB Local has no flag for the bind address: DynamoDBProxyServer does
// `new org.eclipse.jetty.server.Server(port)`, which listens on every
// interface. We build the server with the normal command-line parser, set the
// host on its (not yet opened) Jetty connector, then start it. Arguments are
// the usual DynamoDB Local flags (-inMemory -sharedDb -port N ...).
//
// Run in Java source-file mode, so no compile step is needed:
//   java -Djava.library.path=<dir>/DynamoDBLocal_lib -cp <dir>/DynamoDBLocal.jar LoopbackDynamoDB.java -port 8000 -inMemory
// Fails loudly (exit 1) if a future DynamoDB Local changes the internals.
import java.lang.reflect.Field;

public class LoopbackDynamoDB {
    public static void main(String[] args) throws Exception {
        String host = System.getProperty("dynamodb.host", "127.0.0.1");
        Object proxy = software.amazon.dynamodb.services.local.main.ServerRunner.createServerFromCommandLineArgs(args);
        if (proxy == null) {
            System.err.println("LoopbackDynamoDB: invalid DynamoDB Local arguments");
            System.exit(2);
        }
        Field f = proxy.getClass().getDeclaredField("server");
        f.setAccessible(true);
        Object jetty = f.get(proxy);
        Object[] connectors = (Object[]) jetty.getClass().getMethod("getConnectors").invoke(jetty);
        if (connectors.length == 0) {
            throw new IllegalStateException("DynamoDB Local has no Jetty connector to bind");
        }
        for (Object c : connectors) {
            c.getClass().getMethod("setHost", String.class).invoke(c, host);
        }
        proxy.getClass().getMethod("start").invoke(proxy);
        System.out.println("LoopbackDynamoDB: listening on " + host);
        proxy.getClass().getMethod("join").invoke(proxy);
    }
}
